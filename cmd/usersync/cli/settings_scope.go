package cli

import "strings"

// scope is where a setting applies once accounts are registered: the
// default account's value comes from the environment either way.
type scope int

const (
	scopeUnset scope = iota // no decision: TestEverySettingHasAScope fails
	fleetWide               // one value for the fleet: DATABASE_URL, HTTP, logging, workers
	perAccount              // each registered account sets its own, or inherits the fleet's
)

// accountSettings are the settings an account may set, in table order.
func accountSettings() []setting {
	var out []setting
	for _, s := range settings() {
		if s.Scope == perAccount {
			out = append(out, s)
		}
	}
	return out
}

// settingByEnv returns the setting of an environment variable.
func settingByEnv(env string) (setting, bool) {
	for _, s := range settings() {
		if s.Env == env {
			return s, true
		}
	}
	return setting{}, false
}

// neverInherited says whether an account's value of s is never the
// default account's: its schema and its credentials are its own.
func neverInherited(s setting) bool {
	switch s.Env {
	case "USERSYNC_SCHEMA", "USERSYNC_API_TOKEN", "USERSYNC_OAUTH_TOKEN_URL", "USERSYNC_OAUTH_CLIENT_ID",
		"USERSYNC_OAUTH_CLIENT_SECRET", "USERSYNC_OAUTH_REFRESH_TOKEN", "USERSYNC_OAUTH_AUTHORIZE_URL", "USERSYNC_OAUTH_SCOPES":
		return true
	}
	return false
}

// scopeText is a setting's scope as docs/configuration.md says it.
func scopeText(s setting) string {
	switch {
	case s.Scope != perAccount:
		return "fleet-wide"
	case s.Env == "USERSYNC_PII_KEY":
		return "per account (`usersync accounts add --pii-key-file PATH` or `--pii-key-env NAME`: where the worker reads it; the key is never stored)"
	case s.Secret:
		return "per account (`usersync accounts add --" + secretFileFlag(s) + "`; stored encrypted with USERSYNC_SECRETS_KEY)"
	case neverInherited(s):
		return "per account (`usersync accounts add --" + s.Flag + "`; never the default account's)"
	}
	return "per account (`usersync accounts add --" + s.Flag + "`; else the fleet's)"
}

// secretFileFlag is the accounts add flag that reads a secret from a file:
// USERSYNC_API_TOKEN's is --api-token-file.
func secretFileFlag(s setting) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "USERSYNC_")), "_", "-") + "-file"
}

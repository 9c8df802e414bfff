package config

import (
	"maps"
	"strings"
)

// Scope is where a setting applies once accounts are registered: the
// default account's value comes from the environment either way.
type Scope int

// The scopes of a setting.
const (
	ScopeUnset Scope = iota // no decision: TestEverySettingHasAScope fails
	FleetWide               // one value for the fleet: DATABASE_URL, HTTP, logging, workers
	PerAccount              // each registered account sets its own, or inherits the fleet's
)

// AccountSettings are the settings an account may set, in table order.
func AccountSettings() []Setting {
	var out []Setting
	for _, s := range Settings() {
		if s.Scope == PerAccount {
			out = append(out, s)
		}
	}
	return out
}

// ByEnv returns the setting of an environment variable.
func ByEnv(env string) (Setting, bool) {
	for _, s := range Settings() {
		if s.Env == env {
			return s, true
		}
	}
	return Setting{}, false
}

// NeverInherited says whether an account's value of s is never the
// default account's: its schema and its credentials are its own.
func NeverInherited(s Setting) bool {
	switch s.Env {
	case "USERSYNC_SCHEMA", "USERSYNC_API_TOKEN", "USERSYNC_OAUTH_TOKEN_URL", "USERSYNC_OAUTH_CLIENT_ID",
		"USERSYNC_OAUTH_CLIENT_SECRET", "USERSYNC_OAUTH_REFRESH_TOKEN", "USERSYNC_OAUTH_AUTHORIZE_URL", "USERSYNC_OAUTH_SCOPES":
		return true
	}
	return false
}

// ScopeText is a setting's scope as docs/configuration.md says it.
func ScopeText(s Setting) string {
	switch {
	case s.Scope != PerAccount:
		return "fleet-wide"
	case s.Env == "USERSYNC_PII_KEY":
		return "per account (`usersync accounts add --pii-key-file PATH` or `--pii-key-env NAME`: where the worker reads it; the key is never stored)"
	case s.Secret:
		return "per account (`usersync accounts add --" + FileFlag(s) + "`; stored encrypted with USERSYNC_SECRETS_KEY)"
	case NeverInherited(s):
		return "per account (`usersync accounts add --" + s.Flag + "`; never the default account's)"
	}
	return "per account (`usersync accounts add --" + s.Flag + "`; else the fleet's)"
}

// FileFlag is the accounts add flag that reads a secret from a file:
// USERSYNC_API_TOKEN's is --api-token-file.
func FileFlag(s Setting) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "USERSYNC_")), "_", "-") + "-file"
}

// FleetFlags is flags (Load's) without the account-scoped settings' flags,
// which a command that registers an account takes for the account's.
func FleetFlags(flags map[string]string) map[string]string {
	out := maps.Clone(flags)
	for _, s := range AccountSettings() {
		delete(out, s.Flag)
	}
	return out
}

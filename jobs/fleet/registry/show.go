package registry

import (
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// SettingValue is one account-scoped setting of an account as accounts show
// prints it: a secret's value is "set" (or "" when it has none), never the
// secret.
type SettingValue struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	// From is where the value comes from: account (stored), fleet (the
	// environment's, inherited) or default.
	From string `json:"from"`
}

// Settings says each account-scoped setting's value for a and where it
// comes from, secrets as "set".
func (f *Fleet) Settings(a accounts.Account) []SettingValue {
	var out []SettingValue
	for _, s := range config.AccountSettings() {
		l := SettingValue{Setting: s.Env}
		v, stored := a.Settings[s.Env]
		switch {
		case s.Env == "USERSYNC_PII_KEY" && a.Settings[PIIKeyFile] != "":
			l.Value, l.From = "file "+a.Settings[PIIKeyFile], "account"
			out = append(out, l)
			continue
		case s.Env == "USERSYNC_PII_KEY" && a.Settings[PIIKeyEnv] != "":
			l.Value, l.From = "variable "+a.Settings[PIIKeyEnv], "account"
			out = append(out, l)
			continue
		case stored:
			l.Value, l.From = v, "account"
		case config.NeverInherited(s):
			l.Value, l.From = s.Default, "default"
		default:
			l.Value, l.From = f.Getenv(s.Env), "fleet"
			if l.Value == "" && s.Secret && f.Getenv(s.Env+"_FILE") != "" {
				l.Value = "set"
			}
			if l.Value == "" {
				l.Value = s.Default
			}
		}
		if s.Secret && l.Value != "" {
			l.Value = "set"
		}
		if strings.HasSuffix(s.Env, "_URL") {
			l.Value = config.PrintableURL(l.Value)
		}
		out = append(out, l)
	}
	return out
}

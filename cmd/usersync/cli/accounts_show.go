package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// settingLine is one account-scoped setting as accounts show prints it: a
// secret's value is "set" (or "" when it has none), never the secret.
type settingLine struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	// From is where the value comes from: account (stored), fleet (the
	// environment's, inherited) or default.
	From string `json:"from"`
}

func accountsShowCommand() command {
	return command{
		name:    "accounts show",
		summary: "show an account: schema, paused, and each account-scoped setting (secrets as set)",
		args:    "NAME",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("show", args)
				if err != nil {
					return err
				}
				return withRegistry(ctx, e, func(reg *accounts.Registry) error {
					a, err := reg.Get(ctx, name)
					if err != nil && !errors.Is(err, accounts.ErrBadSettings) {
						return notFound(name, err)
					}
					out := struct {
						accountLine
						Settings []settingLine `json:"settings"`
					}{lineOf(a), accountSettingLines(e, a)}
					if *asJSON {
						return writeJSON(e.stdout, out)
					}
					printAccount(e.stdout, out.accountLine, out.Settings)
					return nil
				})
			}
		},
	}
}

// accountSettingLines says each account-scoped setting's value for a and
// where it comes from, secrets as "set".
func accountSettingLines(e *env, a accounts.Account) []settingLine {
	var out []settingLine
	for _, s := range config.AccountSettings() {
		l := settingLine{Setting: s.Env}
		v, stored := a.Settings[s.Env]
		switch {
		case s.Env == "USERSYNC_PII_KEY" && a.Settings[piiKeyFile] != "":
			l.Value, l.From = "file "+a.Settings[piiKeyFile], "account"
			out = append(out, l)
			continue
		case s.Env == "USERSYNC_PII_KEY" && a.Settings[piiKeyEnv] != "":
			l.Value, l.From = "variable "+a.Settings[piiKeyEnv], "account"
			out = append(out, l)
			continue
		case stored:
			l.Value, l.From = v, "account"
		case config.NeverInherited(s):
			l.Value, l.From = s.Default, "default"
		default:
			l.Value, l.From = e.getenv(s.Env), "fleet"
			if l.Value == "" && s.Secret && e.getenv(s.Env+"_FILE") != "" {
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

func printAccount(w io.Writer, a accountLine, settings []settingLine) {
	paused := "no"
	if a.PausedAt != nil {
		paused = "since " + a.PausedAt.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "account      %s\nschema       %s\npaused       %s\ncreated      %s\nupdated      %s\n\n",
		a.Name, a.Schema, paused, a.CreatedAt.Format(time.RFC3339), a.UpdatedAt.Format(time.RFC3339))
	if a.Problem != "" {
		fmt.Fprintf(w, "problem      %s\n\n", a.Problem)
	}
	for _, l := range settings {
		v := l.Value
		if v == "" {
			v = "(empty)"
		}
		fmt.Fprintf(w, "  %-34s %-8s %s\n", l.Setting, l.From, v)
	}
}

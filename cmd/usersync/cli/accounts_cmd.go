package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// withFleet opens the database (maxConns connections) and the fleet's
// registry for f.
func withFleet(ctx context.Context, e *env, maxConns int32, f func(*registry.Fleet) error) error {
	pool, err := openPool(ctx, e, maxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	fl, err := registry.New(pool, e.fleetConfig(), e.getenv, e.logger)
	if err != nil {
		return err
	}
	return f(fl)
}

// accountLine is an account as accounts list and show print it; it holds no
// secret.
type accountLine struct {
	Name      string     `json:"name"`
	Schema    string     `json:"schema"`
	APIURL    string     `json:"api_url"`
	PausedAt  *time.Time `json:"paused_at"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	// Problem, when set, says which stored settings are not strings (a row
	// edited by hand): the worker schedules none of its jobs.
	Problem string `json:"problem,omitempty"`
}

func lineOf(a accounts.Account) accountLine {
	l := accountLine{Name: a.Name, Schema: a.Schema(), APIURL: config.PrintableURL(a.Settings["USERSYNC_API_URL"]), PausedAt: a.PausedAt,
		CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
	if a.Invalid != nil {
		l.Problem = a.Invalid.Error()
	}
	return l
}

func accountsListCommand() command {
	return command{
		name:    "accounts list",
		summary: "list the registered accounts: name, schema, API URL, paused",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("usersync accounts list takes no argument, not %q", args[0])}
				}
				return withFleet(ctx, e, 2, func(f *registry.Fleet) error {
					list, err := f.Reg.List(ctx)
					if err != nil {
						return err
					}
					lines := make([]accountLine, 0, len(list))
					for _, a := range list {
						lines = append(lines, lineOf(a))
					}
					if *asJSON {
						return writeJSON(e.stdout, struct {
							Accounts []accountLine `json:"accounts"`
						}{lines})
					}
					printAccountList(e.stdout, e.fleetConfig().Schema, lines)
					return nil
				})
			}
		},
	}
}

func printAccountList(w io.Writer, fleetSchema string, lines []accountLine) {
	fmt.Fprintf(w, "%-20s  %-24s  %-7s  %s\n", "NAME", "SCHEMA", "PAUSED", "API URL")
	fmt.Fprintf(w, "%-20s  %-24s  %-7s  %s\n", accounts.Default, fleetSchema, "-", "(USERSYNC_* environment)")
	for _, l := range lines {
		paused := "no"
		if l.PausedAt != nil {
			paused = "yes"
		}
		fmt.Fprintf(w, "%-20s  %-24s  %-7s  %s\n", l.Name, l.Schema, paused, l.APIURL)
		if l.Problem != "" {
			fmt.Fprintf(w, "%-20s  not scheduled: %s\n", "", l.Problem)
		}
	}
}

func accountsPauseCommand() command {
	return accountActionCommand("pause", "stop all of an account's work, scheduled and by hand (its data stays)",
		func(ctx context.Context, reg *accounts.Registry, name string) error { return reg.Pause(ctx, name) },
		"paused: the worker queues none of its work from its next scheduling pass, its queued jobs are cancelled when they start, and sync, backfill, reconcile and snapshot --account refuse it; its data and schema stay")
}

func accountsResumeCommand() command {
	return accountActionCommand("resume", "let a paused account's work run again",
		func(ctx context.Context, reg *accounts.Registry, name string) error { return reg.Resume(ctx, name) },
		"resumed: the worker schedules its work again, and commands by hand run")
}

// accountActionCommand is accounts pause or resume.
func accountActionCommand(verb, summary string, act func(context.Context, *accounts.Registry, string) error, done string) command {
	return command{
		name:    "accounts " + verb,
		summary: summary,
		args:    "NAME",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName(verb, args)
				if err != nil {
					return err
				}
				return withFleet(ctx, e, 2, func(f *registry.Fleet) error {
					if err := act(ctx, f.Reg, name); err != nil {
						return registry.NotFound(name, err)
					}
					fmt.Fprintf(e.stdout, "account %s %s\n", name, done)
					return nil
				})
			}
		},
	}
}

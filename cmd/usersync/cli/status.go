package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/jobs/status"
)

func statusCommand() command {
	return command{
		name:    "status",
		summary: "show the watermark, recent runs, quarantine and schema drift",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print as JSON")
			runs := fs.Int("runs", 10, "how many recent runs to show")
			return func(ctx context.Context, e *env, _ []string) error {
				if *runs < 0 {
					return usageError{fmt.Errorf("--runs must be 0 or more, not %d", *runs)}
				}
				r, err := readStatus(ctx, e, *runs)
				if err != nil {
					return err
				}
				var accts []registry.Status
				if e.account == "" { // the fleet: one line per registered account too
					if accts, err = readAccountStatuses(ctx, e); err != nil {
						return err
					}
				}
				if *asJSON {
					var list any // omitted when there is none
					if len(accts) > 0 {
						list = accts
					}
					return writeJSON(e.stdout, r.JSON(list))
				}
				r.WriteText(e.stdout, e.cfg.APIBudget)
				printAccountStatuses(e.stdout, accts)
				return nil
			}
		},
	}
}

// readStatus reads the status report of the account e runs for.
func readStatus(ctx context.Context, e *env, runs int) (status.Report, error) {
	pool, store, err := openStore(ctx, e, 2)
	if err != nil {
		return status.Report{}, err
	}
	defer pool.Close()
	o := status.Options{Runs: runs, RiverSchema: e.riverSchema(), Account: e.jobAccount(), Remedy: e.authRemedy(), Policy: e.cfg.PII}
	if e.cfg.OAuthTokenURL != "" && e.cfg.OAuthClientID != "" {
		ts, err := tokenStore(e, store)
		if err != nil {
			return status.Report{}, err
		}
		o.Grants = ts
	}
	return status.Read(ctx, store, o)
}

package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/usersync/usersync/jobs/fleet/registry"
)

// readAccountStatuses reads every account's status, the default's first;
// none when the fleet has no registered account (status shows the default's
// in full).
func readAccountStatuses(ctx context.Context, e *env) ([]registry.Status, error) {
	var out []registry.Status
	err := withFleet(ctx, e, 2, func(f *registry.Fleet) (err error) {
		out, err = f.Statuses(ctx, time.Now())
		return err
	})
	return out, err
}

func printAccountStatuses(w io.Writer, list []registry.Status) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "\naccounts     %d (the default and %d registered)\n", len(list), len(list)-1)
	fmt.Fprintf(w, "  %-20s  %-30s  %-20s  %s\n", "NAME", "STATE", "LAST SUCCESSFUL SYNC", "LAG")
	for _, a := range list {
		last, lag := "never", "-"
		if a.LastSuccess != nil {
			last = a.LastSuccess.UTC().Format("2006-01-02 15:04:05")
		}
		if a.LagSeconds != nil {
			lag = time.Duration(*a.LagSeconds * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(w, "  %-20s  %-30s  %-20s  %s\n", a.Name, a.State, last, lag)
		if a.Problem != "" {
			fmt.Fprintf(w, "  %-20s  not scheduled: %s\n", "", a.Problem)
		}
		for _, n := range a.Notices {
			fmt.Fprintf(w, "  %-20s  note: %s\n", "", n)
		}
	}
}

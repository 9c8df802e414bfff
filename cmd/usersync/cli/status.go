package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
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
				r, err := readStatusReport(ctx, e, *runs)
				if err != nil {
					return err
				}
				if e.account == "" { // the fleet: one line per registered account too
					if r.accounts, err = readAccountStatuses(ctx, e); err != nil {
						return err
					}
				}
				if *asJSON {
					return r.writeJSON(e.stdout)
				}
				r.print(e.stdout, e.cfg.APIBudget)
				return nil
			}
		},
	}
}

// statusReport is what usersync status shows: the warehouse's status, the
// job queue's, the last snapshot job's and the personal-data policy's.
type statusReport struct {
	st        warehouse.Status
	jobCounts []jobs.JobCount
	snap      jobs.SnapshotOutcome
	snapAt    time.Time
	policy    policyStatus
	scope     string // the OAuth grant's, as its token endpoint said; "" unknown or no OAuth
	accounts  []accountStatus
}

func readStatusReport(ctx context.Context, e *env, runs int) (statusReport, error) {
	var r statusReport
	pool, store, err := openStore(ctx, e, 2)
	if err != nil {
		return r, err
	}
	defer pool.Close()
	if r.st, err = store.Status(ctx, runs); err != nil {
		return r, err
	}
	cleanStatus(&r.st)
	if r.st.CredentialsRefused != nil {
		r.st.CredentialsRefused.Remedy = e.authRemedy()
	}
	if r.jobCounts, err = jobs.JobCounts(ctx, pool, e.riverSchema(), jobs.AccountName(e.jobAccount())); err != nil {
		return r, fmt.Errorf("reading the job queue: %w", err)
	}
	if r.snap, r.snapAt, err = jobs.LastSnapshot(ctx, pool, e.riverSchema(), jobs.AccountName(e.jobAccount())); err != nil {
		return r, err
	}
	if r.scope, err = grantedScope(ctx, e, store); err != nil {
		return r, err
	}
	r.policy, err = readPolicyStatus(ctx, e, store)
	return r, err
}

// grantedScope is the scope the stored OAuth grant holds, "" when OAuth is
// off or its token endpoint never said.
func grantedScope(ctx context.Context, e *env, store *warehouse.Store) (string, error) {
	if e.cfg.OAuthTokenURL == "" || e.cfg.OAuthClientID == "" {
		return "", nil
	}
	ts, err := tokenStore(e, store)
	if err != nil {
		return "", err
	}
	info, err := ts.Info(ctx)
	return info.Scope, err
}

func (r statusReport) writeJSON(w io.Writer) error {
	type lastSnapshot struct {
		jobs.SnapshotOutcome
		At time.Time `json:"at"`
	}
	out := struct {
		warehouse.Status
		WatermarkLagSeconds *float64        `json:"watermark_lag_seconds"`
		Jobs                []jobs.JobCount `json:"jobs"`
		LastSnapshot        *lastSnapshot   `json:"last_snapshot_job"`
		PersonalData        policyStatus    `json:"personal_data"`
		OAuthScope          string          `json:"oauth_scope,omitempty"`
		Accounts            []accountStatus `json:"accounts,omitempty"`
	}{Status: r.st, Jobs: r.jobCounts, PersonalData: r.policy, OAuthScope: r.scope, Accounts: r.accounts}
	if r.snap.ID != "" || r.snap.Skipped {
		out.LastSnapshot = &lastSnapshot{r.snap, r.snapAt}
	}
	if r.st.Watermark != nil {
		lag := time.Since(*r.st.Watermark).Seconds()
		out.WatermarkLagSeconds = &lag
	}
	return writeJSON(w, out)
}

func (r statusReport) print(w io.Writer, budget float64) {
	printStatus(w, r.st, r.scope, budget, time.Now())
	printPolicy(w, r.policy)
	if r.snap.ID != "" || r.snap.Skipped {
		what := "wrote snapshot " + r.snap.ID
		switch {
		case r.snap.Skipped && r.snap.ID == "":
			what = "skipped: " + r.snap.Reason
		case r.snap.Skipped:
			what = "skipped: nothing changed since snapshot " + r.snap.ID
		}
		fmt.Fprintf(w, "snapshot     %s (job finished %s)\n", what, r.snapAt.UTC().Format(time.RFC3339))
	}
	printJobs(w, r.jobCounts)
	printAccountStatuses(w, r.accounts)
}

// cleanStatus cleans the text of st that came from the API: run errors
// (rows written before FailRun cleaned them may hold escapes or megabytes)
// and the names of unknown attributes.
func cleanStatus(st *warehouse.Status) {
	for i := range st.Runs {
		st.Runs[i].Error = warehouse.CleanText(st.Runs[i].Error)
	}
	if c := st.CredentialsRefused; c != nil {
		c.Error, c.Code = warehouse.CleanText(c.Error), warehouse.CleanText(c.Code)
	}
	drift := make(map[string]int, len(st.Drift))
	for k, v := range st.Drift {
		drift[warehouse.CleanText(k)] += v
	}
	st.Drift = drift
}

// printStatus prints st and the scope of the OAuth grant; budget is
// USERSYNC_API_BUDGET, the share of the rate limit usersync may use.
func printStatus(w io.Writer, st warehouse.Status, scope string, budget float64, now time.Time) {
	fmt.Fprintf(w, "schema       %s (%d live users)\n", st.Schema, st.Users)
	if st.Watermark == nil {
		fmt.Fprintln(w, "watermark    none yet (no sync has finished)")
	} else {
		fmt.Fprintf(w, "watermark    %s (%s behind now)\n", st.Watermark.UTC().Format(time.RFC3339Nano), now.Sub(*st.Watermark).Round(time.Second))
	}
	fmt.Fprintf(w, "quarantine   %d unresolved\n", st.Quarantined)
	// The grant's scope, not the API user's rights (meta.canWrite), which a
	// read-only grant does not narrow; with a static token nothing says.
	if line := scopeLine(scope); line != "" {
		fmt.Fprintf(w, "api scope    %s\n", line)
	}
	if c := st.CredentialsRefused; c != nil {
		fmt.Fprintf(w, "credentials  REFUSED: %s; no run succeeded since %s run %d was refused at %s; %s\n",
			refusedWhat(*c), c.Kind, c.RunID, c.At.UTC().Format(time.RFC3339), c.Remedy)
	}
	if len(st.Drift) > 0 {
		var parts []string
		for k, v := range st.Drift {
			parts = append(parts, fmt.Sprintf("%s (%d)", k, v))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "drift        %s\n", strings.Join(parts, ", "))
	} else {
		fmt.Fprintln(w, "drift        none")
	}
	if rl := rateLimitOf(st); rl != nil {
		fmt.Fprintf(w, "api budget   %s\n", budgetLine(*rl, budget))
	}
	if st.FutureUpdatedAt > 0 {
		fmt.Fprintf(w, "future       %d users updated further ahead than the allowance (USERSYNC_MAX_FUTURE_SKEW); the watermark ignores them\n", st.FutureUpdatedAt)
	}
	if len(st.Runs) == 0 {
		fmt.Fprintln(w, "runs         none yet")
		return
	}
	fmt.Fprintln(w, "\n  RUN  KIND         STATUS       STARTED               DURATION   PAGES   USERS  INSERTED  UPDATED  QUARANT.  REQUESTS")
	for _, r := range st.Runs {
		end := now
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		fmt.Fprintf(w, "%5d  %-11s  %-11s  %-20s  %8s  %6d  %6d  %8d  %7d  %8d  %8d\n", r.RunID, r.Kind, r.Status,
			r.StartedAt.UTC().Format("2006-01-02 15:04:05"), end.Sub(r.StartedAt).Round(time.Millisecond*100),
			r.Pages, r.Fetched, r.Inserted, r.Updated, r.Quarantined, r.Requests)
		if r.Error != "" {
			label := "error" // paused and interrupted runs did not fail: they say why they stopped
			if r.Status == string(warehouse.RunPaused) || r.Status == string(warehouse.RunInterrupted) {
				label = "stopped"
			}
			fmt.Fprintf(w, "       %s: %s\n", label, oneLine(r.Error))
		}
	}
}

// refusedWhat says who refused the credentials and how, without them.
func refusedWhat(c warehouse.CredentialsRefused) string {
	what := fmt.Sprintf("the API answered %d", c.StatusCode)
	if c.Code != "" {
		what = fmt.Sprintf("the token endpoint answered %d %s", c.StatusCode, c.Code)
	}
	return what
}

// printJobs prints the jobs queued or running, and those River gave up on
// (cancelled: a refused credential, a query the API rejects; discarded: out
// of attempts), which run again only when an operator acts.
func printJobs(w io.Writer, counts []jobs.JobCount) {
	active := map[string]bool{"available": true, "running": true, "retryable": true, "scheduled": true, "pending": true}
	gaveUp := map[string]bool{"cancelled": true, "discarded": true}
	var parts, given []string
	for _, c := range counts {
		kind := strings.TrimPrefix(c.Kind, "usersync_")
		if c.Queue == jobs.QueueSlow {
			kind += " (slow lane)"
		}
		part := fmt.Sprintf("%s %s: %d", kind, c.State, c.Count)
		switch {
		case active[c.State]:
			parts = append(parts, part)
		case gaveUp[c.State]:
			given = append(given, part)
		}
	}
	if len(parts) == 0 {
		fmt.Fprintln(w, "\njobs         none queued or running")
	} else {
		fmt.Fprintf(w, "\njobs         %s\n", strings.Join(parts, ", "))
	}
	if len(given) > 0 {
		fmt.Fprintf(w, "gave up      %s (they run again only when retried; their errors are in the runs above and the job UI)\n", strings.Join(given, ", "))
	}
}

// budgetLine describes the rate limit the last run saw; when no more than
// the requests USERSYNC_API_BUDGET keeps for others remain, it says the
// budget is spent and that runs wait for the reset.
func budgetLine(rl syncer.RateLimit, budget float64) string {
	reset := ""
	if rl.Reset != nil {
		reset = ", resets " + rl.Reset.UTC().Format(time.RFC3339)
	}
	if kept := jsonapi.Kept(rl.Limit, budget); rl.Remaining <= kept {
		return fmt.Sprintf("spent: %d of %d requests left as the last run saw them (USERSYNC_API_BUDGET=%g keeps %d for the token owner's other tools); runs wait for the reset%s",
			rl.Remaining, rl.Limit, budget, kept, reset)
	}
	return fmt.Sprintf("%d of %d requests left as the last run saw them%s", rl.Remaining, rl.Limit, reset)
}

// rateLimitOf decodes the rate limit the last run recorded, nil if none.
func rateLimitOf(st warehouse.Status) *syncer.RateLimit {
	var rl syncer.RateLimit
	if len(st.RateLimit) == 0 || json.Unmarshal(st.RateLimit, &rl) != nil || rl.Limit <= 0 {
		return nil
	}
	return &rl
}

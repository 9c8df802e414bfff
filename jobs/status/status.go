// Package status reads what usersync status shows of an account (its
// warehouse, job queue, last snapshot and personal-data policy) and prints it.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// Report is what usersync status shows of one account: the warehouse's
// status, the job queue's, the last snapshot job's and the personal-data
// policy's.
type Report struct {
	st        warehouse.Status
	jobCounts []jobs.JobCount
	snap      jobs.SnapshotOutcome
	snapAt    time.Time
	policy    PolicyStatus
	scope     string // the OAuth grant's, as its token endpoint said; "" unknown or no OAuth
}

// Grants reads the stored OAuth grant (a *tokens.Store).
type Grants interface {
	Info(ctx context.Context) (tokens.Info, error)
}

// Options are what Read needs besides the warehouse.
type Options struct {
	Runs        int    // how many recent runs
	RiverSchema string // the job queue's schema
	Account     string // the account whose jobs count ("" the default account)
	Remedy      string // what to do about refused credentials
	Policy      *normalize.Policy
	Grants      Grants // nil without OAuth
}

// Read reads the report of the warehouse in store.
func Read(ctx context.Context, store *warehouse.Store, o Options) (Report, error) {
	var r Report
	var err error
	if r.st, err = store.Status(ctx, o.Runs); err != nil {
		return r, err
	}
	cleanStatus(&r.st)
	if r.st.CredentialsRefused != nil {
		r.st.CredentialsRefused.Remedy = o.Remedy
	}
	account := jobs.AccountName(o.Account)
	if r.jobCounts, err = jobs.JobCounts(ctx, store.Pool(), o.RiverSchema, account); err != nil {
		return r, fmt.Errorf("reading the job queue: %w", err)
	}
	if r.snap, r.snapAt, err = jobs.LastSnapshot(ctx, store.Pool(), o.RiverSchema, account); err != nil {
		return r, err
	}
	if o.Grants != nil {
		info, err := o.Grants.Info(ctx)
		if err != nil {
			return r, err
		}
		r.scope = info.Scope
	}
	r.policy, err = readPolicyStatus(ctx, store, o.Policy)
	return r, err
}

// JSON is the report as usersync status --json prints it, with accounts
// (nil for none) last.
func (r Report) JSON(accounts any) any {
	type lastSnapshot struct {
		jobs.SnapshotOutcome
		At time.Time `json:"at"`
	}
	out := struct {
		warehouse.Status
		WatermarkLagSeconds *float64        `json:"watermark_lag_seconds"`
		Jobs                []jobs.JobCount `json:"jobs"`
		LastSnapshot        *lastSnapshot   `json:"last_snapshot_job"`
		PersonalData        PolicyStatus    `json:"personal_data"`
		OAuthScope          string          `json:"oauth_scope,omitempty"`
		Accounts            any             `json:"accounts,omitempty"`
	}{Status: r.st, Jobs: r.jobCounts, PersonalData: r.policy, OAuthScope: r.scope, Accounts: accounts}
	if r.snap.ID != "" || r.snap.Skipped {
		out.LastSnapshot = &lastSnapshot{r.snap, r.snapAt}
	}
	if r.st.Watermark != nil {
		lag := time.Since(*r.st.Watermark).Seconds()
		out.WatermarkLagSeconds = &lag
	}
	return out
}

// WriteText prints the report as usersync status does; budget is
// USERSYNC_API_BUDGET.
func (r Report) WriteText(w io.Writer, budget float64) {
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
	if line := tokens.ScopeLine(scope); line != "" {
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
			fmt.Fprintf(w, "       %s: %s\n", label, strings.Join(strings.Fields(r.Error), " "))
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

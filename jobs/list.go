package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/warehouse"
)

// ListOptions are what usersync jobs list asks of the queue.
type ListOptions struct {
	States []rivertype.JobState // ParseJobStates
	Limit  int                  // most jobs listed, newest first
	// ByAccount keeps only the jobs of Account (DefaultAccount's have no
	// account argument).
	ByAccount bool
	Account   string
}

// ListJobs lists the queue's jobs as usersync jobs list shows them.
func ListJobs(ctx context.Context, rc *river.Client[pgx.Tx], o ListOptions) ([]JobLine, error) {
	params := river.NewJobListParams().States(o.States...).OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(o.Limit)
	if o.ByAccount {
		params = params.Where("coalesce(args->>'account', '') = @account", river.NamedArgs{"account": o.Account})
	}
	res, err := rc.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return jobLines(res.Jobs), nil
}

// ParseJobStates parses --state, or gives every state but completed (and that
// one too with all).
func ParseJobStates(list string, all bool) ([]rivertype.JobState, error) {
	if list == "" {
		out := []rivertype.JobState{}
		for _, s := range rivertype.JobStates() {
			if all || s != rivertype.JobStateCompleted {
				out = append(out, s)
			}
		}
		return out, nil
	}
	known := map[string]bool{}
	for _, s := range rivertype.JobStates() {
		known[string(s)] = true
	}
	var out []rivertype.JobState
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !known[s] {
			return nil, fmt.Errorf("--state: %q is not a job state (available, scheduled, running, retryable, pending, cancelled, discarded, completed)", s)
		}
		out = append(out, rivertype.JobState(s))
	}
	return out, nil
}

// JobLine is a job as usersync jobs list shows it.
type JobLine struct {
	ID          int64           `json:"id"`
	Account     string          `json:"account"`
	Kind        string          `json:"kind"`
	Queue       string          `json:"queue"` // its lane, for a sync: default, or usersync_slow
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	AttemptedAt *time.Time      `json:"attempted_at"`
	FinalizedAt *time.Time      `json:"finalized_at"`
	Args        json.RawMessage `json:"args"`
	LastError   string          `json:"last_error"` // of its last failed attempt, on one line
}

func jobLines(rows []*rivertype.JobRow) []JobLine {
	out := make([]JobLine, 0, len(rows))
	for _, r := range rows {
		l := JobLine{ID: r.ID, Account: listedAccountOf(r.Kind, r.EncodedArgs), Kind: r.Kind, Queue: r.Queue, State: string(r.State), Attempt: r.Attempt, MaxAttempts: r.MaxAttempts,
			ScheduledAt: r.ScheduledAt.UTC(), AttemptedAt: r.AttemptedAt, FinalizedAt: r.FinalizedAt, Args: r.EncodedArgs}
		if len(l.Args) == 0 {
			l.Args = json.RawMessage("{}")
		}
		if n := len(r.Errors); n > 0 {
			l.LastError = strings.Join(strings.Fields(warehouse.CleanText(r.Errors[n-1].Error)), " ")
		}
		out = append(out, l)
	}
	return out
}

// WriteJobLines writes lines as the table usersync jobs list prints.
func WriteJobLines(w io.Writer, lines []JobLine) {
	if len(lines) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "%8s  %-16s  %-18s  %-17s  %-9s  %-7s  %-19s  %-19s  %s\n", "ID", "ACCOUNT", "KIND", "QUEUE", "STATE", "ATTEMPT", "SCHEDULED", "ATTEMPTED", "LAST ERROR")
	for _, l := range lines {
		last := l.LastError
		if len(last) > 120 {
			last = last[:117] + "..."
		}
		fmt.Fprintf(w, "%8d  %-16s  %-18s  %-17s  %-9s  %3d/%-3d  %-19s  %-19s  %s\n", l.ID, l.Account, l.Kind, l.Queue, l.State, l.Attempt, l.MaxAttempts,
			at(&l.ScheduledAt), at(l.AttemptedAt), last)
	}
}

// listedAccountOf is the account a job is of: the one its arguments name, the
// default account's when they name none, "-" for the fleet's own jobs.
func listedAccountOf(kind string, args []byte) string {
	if kind == KindDue || kind == KindViews {
		return "-"
	}
	var a struct {
		Account *string `json:"account"`
	}
	if json.Unmarshal(args, &a) != nil || a.Account == nil || *a.Account == "" {
		return DefaultAccount
	}
	return *a.Account
}

// JobActionOutcome says what cancel or retry did, from the job's state
// after it.
func JobActionOutcome(verb string, row *rivertype.JobRow) string {
	switch {
	case verb == "cancel" && row.State == rivertype.JobStateCancelled:
		return "cancelled"
	case verb == "cancel" && row.State == rivertype.JobStateRunning:
		return "running: the worker running it was asked to cancel it (its run keeps its checkpoint)"
	case verb == "cancel":
		return fmt.Sprintf("%s: a finished job is not cancelled", row.State)
	case row.State == rivertype.JobStateAvailable:
		return "available: a worker picks it up now"
	case row.State == rivertype.JobStateRunning:
		return "running: a running job is not retried"
	}
	return string(row.State)
}

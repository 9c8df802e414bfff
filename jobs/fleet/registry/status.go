package registry

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/warehouse"
)

// Status is an account as usersync status (of the fleet) shows it, one
// line each.
type Status struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
	Paused bool   `json:"paused"`
	// State is the account's state in a word or a short phrase: ok,
	// paused, never synced, credentials refused (HTTP 401), failing (its
	// last run failed) or not scheduled (its settings make no
	// configuration).
	State string `json:"state"`
	// LastSuccess is when its newest successful sync or backfill finished;
	// nil when none did.
	LastSuccess *time.Time `json:"last_successful_sync"`
	// LagSeconds is how far its watermark is behind now; nil before its
	// first sync.
	LagSeconds *float64 `json:"watermark_lag_seconds"`
	// Problem, when set, says why its stored settings make no
	// configuration: the worker schedules none of its jobs until it is
	// mended (usersync accounts set).
	Problem string `json:"problem,omitempty"`
	// Notices say what its row, stored by an earlier release, asks of
	// the operator: its PII key moved out of the database, its secrets
	// encrypted.
	Notices []string `json:"notices,omitempty"`
}

// Statuses reads every account's status at now, the default's first;
// none when the fleet has no registered account (status shows the
// default's in full). An account whose settings make no configuration is
// listed with its problem, never stops the others.
func (f *Fleet) Statuses(ctx context.Context, now time.Time) ([]Status, error) {
	all, err := f.List(ctx)
	if err != nil {
		return nil, err
	}
	if len(all) < 2 {
		return nil, nil
	}
	var out []Status
	for _, a := range all {
		if a.Err != nil {
			out = append(out, Status{Name: a.Name, Schema: a.Cfg.Schema, Paused: a.Paused, State: "not scheduled", Problem: a.Err.Error(), Notices: a.Notices})
			continue
		}
		st, err := runStatus(ctx, f.Pool, a, now)
		if err != nil {
			return nil, fmt.Errorf("account %s: %w", a.Name, err)
		}
		st.Notices = a.Notices
		out = append(out, st)
	}
	return out, nil
}

// runStatus reads a's watermark, its last successful sync and its
// state.
func runStatus(ctx context.Context, pool *pgxpool.Pool, a Account, now time.Time) (Status, error) {
	out := Status{Name: a.Name, Schema: a.Cfg.Schema, Paused: a.Paused}
	store, err := warehouse.NewStore(pool, a.Cfg.Schema)
	if err != nil {
		return out, err
	}
	st, err := store.Status(ctx, 1)
	if err != nil {
		return out, err
	}
	if st.Watermark != nil {
		lag := now.Sub(*st.Watermark).Seconds()
		out.LagSeconds = &lag
	}
	out.LastSuccess = st.LastSuccess
	out.State = state(a.Paused, st)
	return out, nil
}

// state is an account's state in status's words.
func state(paused bool, st warehouse.Status) string {
	switch {
	case paused:
		return "paused"
	case st.CredentialsRefused != nil:
		return fmt.Sprintf("credentials refused (HTTP %d)", st.CredentialsRefused.StatusCode)
	case len(st.Runs) > 0 && st.Runs[0].Status == "failed":
		return "failing"
	case st.LastSuccess == nil:
		return "never synced"
	}
	return "ok"
}

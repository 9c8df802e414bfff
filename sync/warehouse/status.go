package warehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is what `usersync status` shows of the warehouse.
type Status struct {
	Schema      string         `json:"schema"`
	Watermark   *time.Time     `json:"watermark"`
	Quarantined int64          `json:"quarantined_unresolved"`
	Drift       map[string]int `json:"unknown_attributes"`
	// FutureUpdatedAt is how many users the last sync found updated
	// further in the future than its allowance (they did not move the
	// watermark).
	FutureUpdatedAt int64 `json:"future_updated_at"`
	// RateLimit is the API's rate limit as the last run that recorded it saw
	// it (limit, remaining, reset), raw JSON; null when none did.
	RateLimit json.RawMessage `json:"rate_limit"`
	// CredentialsRefused is the newest run whose credentials the API or its
	// token endpoint refused, while no run succeeded after it; nil otherwise.
	CredentialsRefused *CredentialsRefused `json:"credentials_refused"`
	Users              int64               `json:"users_live"`
	CanWrite           *bool               `json:"can_write"` // the API user's write access to users, as last seen by a run
	// LastSuccess is when the newest incremental or backfill run that
	// succeeded ended; nil before the first.
	LastSuccess *time.Time  `json:"last_success"`
	Runs        []RunStatus `json:"runs"`
}

// RunStatus is one run as `status` shows it.
type RunStatus struct {
	RunID      int64      `json:"run_id"`
	Kind       string     `json:"kind"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// Progress is the run's counters, as its last checkpoint saved them.
	Progress
	Error string `json:"error,omitempty"`
}

// CredentialsRefused is a run the API refused the credentials of.
type CredentialsRefused struct {
	RunID      int64     `json:"run_id"`
	Kind       string    `json:"kind"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status"`         // what the API or the token endpoint answered
	Code       string    `json:"code,omitempty"` // the OAuth error code, such as invalid_grant
	Error      string    `json:"error"`
	// Remedy says what to do; filled by the command, which knows the
	// configuration.
	Remedy string `json:"remedy,omitempty"`
}

// Status reads the watermark, the last runs, the quarantine and the drift.
func (s *Store) Status(ctx context.Context, lastRuns int) (Status, error) {
	st := Status{Schema: s.schema, Drift: map[string]int{}}
	var err error
	wm, err := s.runs.Watermark(ctx)
	if err != nil {
		return st, err
	}
	if !wm.IsZero() {
		st.Watermark = &wm
	}
	var drift []byte
	err = s.pool.QueryRow(ctx, s.runs.sql.status).Scan(&st.Quarantined, &st.Users, &drift, &st.CanWrite, &st.FutureUpdatedAt, &st.RateLimit, &st.LastSuccess)
	if err != nil {
		return st, fmt.Errorf("reading status: %w", err)
	}
	if len(drift) > 0 {
		if err := json.Unmarshal(drift, &st.Drift); err != nil {
			return st, fmt.Errorf("decoding drift: %w", err)
		}
	}
	if st.CredentialsRefused, err = s.credentialsRefused(ctx); err != nil {
		return st, err
	}
	rows, err := s.pool.Query(ctx, s.runs.sql.lastRuns, lastRuns)
	if err != nil {
		return st, fmt.Errorf("reading runs: %w", err)
	}
	st.Runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (RunStatus, error) {
		r, err := scanRun(row)
		return RunStatus{RunID: r.ID, Kind: r.Kind, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
			Progress: r.Progress, Error: r.Error}, err
	})
	if err != nil {
		return st, fmt.Errorf("reading runs: %w", err)
	}
	return st, nil
}

func (s *Store) credentialsRefused(ctx context.Context) (*CredentialsRefused, error) {
	var c CredentialsRefused
	err := s.pool.QueryRow(ctx, s.runs.sql.credentialsRefused).Scan(&c.RunID, &c.Kind, &c.At, &c.StatusCode, &c.Code, &c.Error)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading refused credentials: %w", err)
	}
	return &c, nil
}

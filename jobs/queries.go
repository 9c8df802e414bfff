package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// JobCount is the number of usersync jobs of an account and kind in a
// state.
type JobCount struct {
	Account string `json:"-"`
	Kind    string `json:"kind"`
	State   string `json:"state"`
	// Queue is the job's queue: for a sync, its lane (QueueSync, or
	// QueueSlow).
	Queue string `json:"queue"`
	Count int64  `json:"count"`
}

// JobCounts counts the jobs of account by kind, state and queue. A missing River
// schema reads as no jobs.
func JobCounts(ctx context.Context, pool *pgxpool.Pool, riverSchema, account string) ([]JobCount, error) {
	r, err := newRiverDB(pool, riverSchema)
	if err != nil {
		return nil, err
	}
	return r.jobCounts(ctx, &account)
}

// jobCounts counts the jobs of account (nil: of every account).
func (r *riverDB) jobCounts(ctx context.Context, account *string) ([]JobCount, error) {
	if exists, err := r.tablesExist(ctx); err != nil || !exists {
		return nil, err
	}
	rows, err := r.pool.Query(ctx, r.q.jobCounts, account)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []JobCount
	for rows.Next() {
		var jc JobCount
		if err := rows.Scan(&jc.Account, &jc.Kind, &jc.State, &jc.Queue, &jc.Count); err != nil {
			return nil, err
		}
		out = append(out, jc)
	}
	return out, rows.Err()
}

// Kinds returns usersync's job kinds, in the order metrics list them.
func Kinds() []string { return []string{KindSync, KindBackfill, KindReconcile, KindSnapshot} }

// JobAge is how long the oldest running job of an account and kind has
// been in its current attempt (since River's attempted_at); 0 when none
// runs.
type JobAge struct {
	Account string
	Kind    string
	Running time.Duration
}

// OldestRunningJobs reads the ages of the oldest running jobs (oldestRunning).
func OldestRunningJobs(ctx context.Context, pool *pgxpool.Pool, riverSchema string) ([]JobAge, error) {
	r, err := newRiverDB(pool, riverSchema)
	if err != nil {
		return nil, err
	}
	return r.oldestRunning(ctx)
}

// oldestRunning returns one JobAge for each of Kinds() of the default
// account, 0 for a kind with no running job, so that a series exists whether
// or not a job runs: an alert on how long a job has run then reads one value
// per scrape, not the gaps between jobs; and one for every other account's
// kind with a running job. The age is measured by the database's clock,
// which set attempted_at. A missing River schema reads as no jobs.
func (r *riverDB) oldestRunning(ctx context.Context) ([]JobAge, error) {
	kinds := Kinds()
	out := make([]JobAge, len(kinds))
	for i, k := range kinds {
		out[i] = JobAge{Account: DefaultAccount, Kind: k}
	}
	if exists, err := r.tablesExist(ctx); err != nil || !exists {
		return out, err
	}
	rows, err := r.pool.Query(ctx, r.q.oldestRunning, kinds)
	if err != nil {
		return nil, fmt.Errorf("reading running jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ja JobAge
		var secs float64
		if err := rows.Scan(&ja.Account, &ja.Kind, &secs); err != nil {
			return nil, fmt.Errorf("reading running jobs: %w", err)
		}
		ja.Running = time.Duration(secs * float64(time.Second))
		if ja.Account == DefaultAccount {
			out[slices.Index(kinds, ja.Kind)] = ja
		} else {
			out = append(out, ja)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading running jobs: %w", err)
	}
	return out, nil
}

// SnapshotJobState is what the snapshot jobs kept say.
type SnapshotJobState struct {
	// LastSuccess is when the newest job that left a current snapshot
	// ended; zero when none is kept.
	LastSuccess time.Time
	// LastBytes is the size of that snapshot (0 for jobs of versions that
	// did not record it).
	LastBytes int64
	// Since is when the oldest snapshot job kept, in any state, was
	// created; zero when none is.
	Since time.Time
}

// SnapshotJobs reads the snapshot jobs of account River keeps. A missing
// River schema reads as no jobs.
func SnapshotJobs(ctx context.Context, pool *pgxpool.Pool, riverSchema, account string) (SnapshotJobState, error) {
	r, err := newRiverDB(pool, riverSchema)
	if err != nil {
		return SnapshotJobState{}, err
	}
	return r.snapshotJobs(ctx, account)
}

// snapshotJobs reads the snapshot jobs of account River keeps. A missing
// River schema reads as no jobs.
func (r *riverDB) snapshotJobs(ctx context.Context, account string) (SnapshotJobState, error) {
	var st SnapshotJobState
	if exists, err := r.tablesExist(ctx); err != nil || !exists {
		return st, err
	}
	var since *time.Time
	if err := r.pool.QueryRow(ctx, r.q.oldestSnapshotJob, KindSnapshot, account).Scan(&since); err != nil {
		return st, fmt.Errorf("reading the oldest snapshot job: %w", err)
	}
	if since != nil {
		st.Since = *since
	}
	// A skip because no run had completed left no current snapshot; one
	// because nothing changed did: the newest snapshot holds what a new one
	// would.
	err := r.pool.QueryRow(ctx, r.q.lastCurrentSnapshot, KindSnapshot, account).Scan(&st.LastSuccess, &st.LastBytes)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return st, fmt.Errorf("reading the last snapshot job: %w", err)
	}
	return st, nil
}

// LastSnapshot returns the outcome of the newest completed snapshot job of
// account and when it finished; a zero outcome when none is kept.
func LastSnapshot(ctx context.Context, pool *pgxpool.Pool, riverSchema, account string) (SnapshotOutcome, time.Time, error) {
	var out SnapshotOutcome
	var raw []byte
	var at time.Time
	r, err := newRiverDB(pool, riverSchema)
	if err != nil {
		return out, at, err
	}
	err = pool.QueryRow(ctx, r.q.lastSnapshot, KindSnapshot, account).Scan(&raw, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, at, nil
	}
	if err != nil {
		return out, at, fmt.Errorf("reading the last snapshot job: %w", err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, at, fmt.Errorf("reading the last snapshot job: %w", err)
	}
	return out, at, nil
}

// WorkerRunning returns a function that says whether a worker runs on the
// job queue in riverSchema, for a caller that asks again and again (usersync
// backfill --wait): every running River client takes part in its leader
// election, and a leader renews its term every few seconds, so a live term
// means one runs.
func WorkerRunning(pool *pgxpool.Pool, riverSchema string) (func(ctx context.Context) (bool, error), error) {
	r, err := newRiverDB(pool, riverSchema)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (bool, error) {
		var ok bool
		if err := pool.QueryRow(ctx, r.q.workerRunning).Scan(&ok); err != nil {
			return false, fmt.Errorf("reading the job queue's leader: %w", err)
		}
		return ok, nil
	}, nil
}

// Package syncer orchestrates runs: the dimensions (teams, roles, profiles)
// listed in full, then the users by updatedAt from the watermark minus the
// lookback (or all of them, or a closed range), each page normalized and
// written in one transaction with the run's checkpoint, while the next page
// downloads. A run that dies resumes from its checkpoint; the watermark moves
// only after the last page commits.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// Config configures a Syncer.
type Config struct {
	PageSize int           // page[size] of user requests (default 1000)
	Lookback time.Duration // how far before the watermark incremental runs start (default 10m)
	Prefetch int           // pages fetched ahead of the one being handed to the writers (default 1)
	// Writers is how many users pages are written at once, each on its own
	// connection (default 2; see warehouse.UsersLoad). With Prefetch 1, at
	// most Writers+2 pages are in memory: one fetched ahead, one waiting for
	// a writer, and the ones being written.
	Writers int
	// NoDataConnections stops asking for users' meta.dataConnections
	// (provideDataConnections); the stored values are then left alone.
	NoDataConnections bool
	Logger            *slog.Logger
	Now               func() time.Time // the clock (default time.Now)
	// MaxFutureSkew is how far past the start of a run a user's updatedAt
	// may lie and still move the watermark (default 24h). A later one (a
	// clock gone wrong, a hostile value such as 9999-12-31) would make
	// every later incremental sync ask only for changes after it: the user
	// is stored, counted in Summary.FutureUpdatedAt, and the watermark
	// stays.
	MaxFutureSkew time.Duration
	// Progress, when set, is called after each committed page.
	Progress func(Progress)
	// Policy is the personal-data policy applied to users before anything
	// is written (rows, history, quarantine); nil keeps everything.
	Policy *normalize.Policy
	// DeletedRetention, when set, makes a reconcile remove the users marked
	// deleted longer ago than it, with their history.
	DeletedRetention time.Duration
	// ReconcileResumeWithin is how long after it began an interrupted
	// reconcile's id walk is resumed by the next reconcile, instead of
	// walking every id again (default DefaultReconcileResumeWithin; negative:
	// never). The walk's view of the ids behind its cursor is as old as the
	// walk: a user deleted there meanwhile is marked by the next reconcile.
	ReconcileResumeWithin time.Duration
}

// DefaultMaxFutureSkew is Config.MaxFutureSkew when not set.
const DefaultMaxFutureSkew = 24 * time.Hour

// DefaultReconcileResumeWithin is Config.ReconcileResumeWithin when not set.
const DefaultReconcileResumeWithin = 6 * time.Hour

// Progress is a live view of a run, for progress lines and job metadata.
type Progress struct {
	RunID   int64
	Kind    string
	Pages   int64
	Rows    int64 // resources received
	Elapsed time.Duration
}

// Syncer runs syncs against one API client and one warehouse.
type Syncer struct {
	client  *jsonapi.Client
	store   *warehouse.Store
	cfg     Config
	norm    map[string]*normalize.Normalizer
	linkage teamLinkage
	// personal is the store's personal-data side under Config.Policy,
	// rendered once (nil, with personalErr, if that failed).
	personal    *warehouse.Personal
	personalErr error
}

// New returns a Syncer.
func New(client *jsonapi.Client, store *warehouse.Store, cfg Config) *Syncer {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 1000
	}
	if cfg.Lookback < 0 {
		cfg.Lookback = 0
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 2
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxFutureSkew <= 0 {
		cfg.MaxFutureSkew = DefaultMaxFutureSkew
	}
	if cfg.ReconcileResumeWithin == 0 {
		cfg.ReconcileResumeWithin = DefaultReconcileResumeWithin
	}
	s := &Syncer{client: client, store: store, cfg: cfg, norm: map[string]*normalize.Normalizer{}}
	for _, r := range schema.Resources() {
		s.norm[r.Type] = normalize.New(r)
	}
	s.norm["user"].SetPolicy(cfg.Policy)
	if store != nil {
		s.personal, s.personalErr = store.Personal(cfg.Policy)
		if s.personalErr == nil {
			store.WriteUnder(s.personal)
		}
	}
	return s
}

// Request says what a run should do.
type Request struct {
	// Kind is warehouse.KindIncremental, KindFull or KindBackfill.
	Kind string
	// Since and Until bound a backfill's updatedAt range (inclusive); either
	// may be nil for an open end.
	Since, Until *time.Time
	// WaitLock waits for a running sync to finish instead of failing with
	// warehouse.ErrLocked.
	WaitLock bool
	// LockTimeout, when set, waits that long for the lock before failing
	// with warehouse.ErrLocked (a queued job then snoozes).
	LockTimeout time.Duration
	// JobID is the River job running this, if any.
	JobID *int64
	// Drain, when closed, ends the run after the page in flight commits,
	// with ErrDrained: the run keeps its checkpoint and the next one resumes.
	Drain <-chan struct{}
}

// ErrDrained ends a run whose Request.Drain was closed (the process is
// stopping). Nothing is lost: the next run resumes from the checkpoint.
var ErrDrained = errors.New("stopped after the last committed page because the process is shutting down; the next run resumes")

// Run performs one run under the sync lock and returns its summary. A
// failed run is recorded with its error and checkpoint, and the next run of
// the same kind resumes it.
func (s *Syncer) Run(ctx context.Context, req Request) (Summary, error) {
	switch req.Kind {
	case warehouse.KindIncremental, warehouse.KindFull, warehouse.KindBackfill:
	default:
		return Summary{}, fmt.Errorf("syncing: unknown run kind %q", req.Kind)
	}
	if req.Since != nil && req.Until != nil && req.Until.Before(*req.Since) {
		return Summary{}, errors.New("syncing: --until is before --since")
	}
	lock, err := s.lock(ctx, req)
	if err != nil {
		return Summary{}, err
	}
	defer lock.Release()
	policyID, err := s.notePolicy(ctx)
	if err != nil {
		return Summary{}, err
	}

	r := &run{s: s, req: req, started: s.cfg.Now(), statsBefore: s.client.Stats(), policyID: policyID}
	sum, err := r.execute(ctx)
	if err != nil && r.runID != 0 {
		// Record the failure even when ctx was cancelled (SIGTERM): the
		// checkpoint is already committed, so the next run resumes.
		ferr := s.store.EndRun(context.WithoutCancel(ctx), r.runID, runEnd(err), err, s.lastRateLimit())
		err = errors.Join(err, ferr)
	}
	return sum, err
}

// Paused says whether err stopped a run to wait rather than failed it: a
// worker draining for shutdown, or a rate limit longer than the client
// sleeps. The run keeps its checkpoint and the next one resumes it.
func Paused(err error) bool {
	var rl *jsonapi.RateLimitError
	return errors.Is(err, ErrDrained) || errors.As(err, &rl)
}

func runEnd(err error) warehouse.RunEnd {
	if Paused(err) {
		return warehouse.RunPaused
	}
	return warehouse.RunFailed
}

func (s *Syncer) lock(ctx context.Context, req Request) (*warehouse.SyncLock, error) {
	if req.LockTimeout <= 0 || req.WaitLock {
		return s.store.Lock(ctx, req.WaitLock)
	}
	lctx, cancel := context.WithTimeout(ctx, req.LockTimeout)
	defer cancel()
	lock, err := s.store.Lock(lctx, true)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, warehouse.ErrLocked
	}
	return lock, err
}

package syncer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dimensions"
	"github.com/usersync/usersync/sync/warehouse/pii"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// Config configures a Syncer.
type Config struct {
	PageSize int           // page[size] of user requests (default 1000)
	Lookback time.Duration // how far before the watermark incremental runs start (default 10m)
	Prefetch int           // pages fetched ahead of the one being handed to the writers (default 1)
	// Writers is how many users pages are written at once, each on its own
	// connection (default 2; see pipeline.go). With Prefetch 1, at
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
	// personal is the store's personal-data side under Config.Policy and
	// dims its dimensions, rendered once by New.
	personal *pii.Store
	users    *users.Store
	dims     *dimensions.Store
	// quiet is the hint of the last incremental run that changed nothing
	// (quietRun); nil when the last run gives none.
	quiet atomic.Pointer[quietHint]
}

// New returns a Syncer, or the error of rendering the store's statements
// for cfg.Policy. A nil store makes a Syncer that only builds queries.
func New(client *jsonapi.Client, store *warehouse.Store, cfg Config) (*Syncer, error) {
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
		if err := s.openStores(store, cfg.Policy); err != nil {
			return nil, fmt.Errorf("preparing the warehouse statements: %w", err)
		}
	}
	return s, nil
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
	// Guard, when set, is a condition Quiet records a run under besides its
	// own (the fleet's: the account is still registered and not paused).
	Guard *warehouse.Guard
}

// ErrInterrupted marks the error of a run its process stopped: a worker
// draining for shutdown (ErrDrained), or the run's context cancelled (Ctrl-C,
// SIGTERM, River stopping). Nothing failed: the run is recorded interrupted
// and the next run of its kind resumes from its checkpoint. A context that
// ran out of time (a job timeout) is a failure, not an interruption.
var ErrInterrupted = errors.New("run interrupted")

// ErrDrained ends a run whose Request.Drain was closed (the process is
// stopping), or a run that Drain stopped before it began. Nothing is lost:
// the next run resumes from the checkpoint.
var ErrDrained = fmt.Errorf("%w: stopped after the last committed page because the process is shutting down; the next run resumes", ErrInterrupted)

// Run performs one run under the sync lock and returns its summary. A
// failed run is recorded with its error and checkpoint, and the next run of
// the same kind resumes it. A run whose Request.Drain is already closed, or
// closes while it waits for the lock, does not start.
func (s *Syncer) Run(ctx context.Context, req Request) (Summary, error) {
	switch req.Kind {
	case warehouse.KindIncremental, warehouse.KindFull, warehouse.KindBackfill:
	default:
		return Summary{}, fmt.Errorf("syncing: unknown run kind %q", req.Kind)
	}
	if req.Since != nil && req.Until != nil && req.Until.Before(*req.Since) {
		return Summary{}, errors.New("syncing: --until is before --since")
	}
	s.quiet.Store(nil)
	lock, err := s.lock(ctx, req)
	if err != nil {
		return Summary{}, interrupted(ctx, err)
	}
	defer lock.Release()
	if closed(req.Drain) {
		return Summary{}, ErrDrained
	}
	policyID, err := s.notePolicy(ctx)
	if err != nil {
		return Summary{}, interrupted(ctx, err)
	}

	r := &run{s: s, req: req, started: s.cfg.Now(), statsBefore: s.client.Stats(), policyID: policyID}
	sum, err := r.execute(ctx)
	if err == nil {
		s.noteQuiet(r, sum)
	}
	if err != nil && r.runID != 0 {
		var p warehouse.Progress
		r.fillRequests(&p)
		return sum, s.endRun(ctx, r.runID, err, p)
	}
	return sum, interrupted(ctx, err)
}

// endRun records a run that did not succeed: interrupted, paused or failed,
// with its request counters p, the rate limit it last saw and whether the
// API refused its credentials. It records even when ctx was cancelled
// (SIGTERM): the checkpoint is already committed, so the next run resumes.
// It returns the run's error, marked ErrInterrupted when it was.
func (s *Syncer) endRun(ctx context.Context, runID int64, err error, p warehouse.Progress) error {
	err = interrupted(ctx, err)
	ferr := s.store.Runs().End(context.WithoutCancel(ctx), runID, warehouse.RunEnding{End: runEnd(err), Err: err,
		Requests: p, Summary: s.endSummary(err)})
	return errors.Join(err, ferr)
}

// interrupted marks err ErrInterrupted when the run stopped because its
// context was cancelled (not timed out). A cancel whose cause is itself an
// ErrInterrupted (a job yielding its worker slot) says so in place of a stop.
func interrupted(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, ErrInterrupted) || !errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrInterrupted) {
		return fmt.Errorf("%w (%w)", cause, err)
	}
	return fmt.Errorf("%w: the process was stopped (%w); the next run resumes from the last committed page", ErrInterrupted, err)
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Paused says whether err stopped a run to wait for the API's rate limit
// (longer than the client sleeps) rather than failed it. The run keeps its
// checkpoint and the next one resumes it.
func Paused(err error) bool {
	var rl *jsonapi.RateLimitError
	return !Interrupted(err) && errors.As(err, &rl)
}

// Interrupted says whether err is that of a run its process stopped
// (ErrInterrupted): not a failure; the next run resumes it.
func Interrupted(err error) bool { return errors.Is(err, ErrInterrupted) }

func runEnd(err error) warehouse.RunEnd {
	switch {
	case Interrupted(err):
		return warehouse.RunInterrupted
	case Paused(err):
		return warehouse.RunPaused
	}
	return warehouse.RunFailed
}

// lockNow takes the sync lock, waiting for it when wait is set.
func (s *Syncer) lockNow(ctx context.Context, wait bool) (*warehouse.SyncLock, error) {
	if wait {
		return s.store.Lock(ctx)
	}
	return s.store.TryLock(ctx)
}

// lock takes the sync lock as req says. A wait bounded by LockTimeout ends
// with warehouse.ErrLocked, and with ErrDrained when Drain closes first: a
// stopping worker starts no run, though the run it waited on has released
// the lock.
func (s *Syncer) lock(ctx context.Context, req Request) (*warehouse.SyncLock, error) {
	if closed(req.Drain) {
		return nil, ErrDrained
	}
	if req.LockTimeout <= 0 || req.WaitLock {
		return s.lockNow(ctx, req.WaitLock)
	}
	tctx, cancel := context.WithTimeout(ctx, req.LockTimeout)
	defer cancel()
	lctx, stop := context.WithCancelCause(tctx)
	defer stop(nil)
	go func() {
		select {
		case <-req.Drain:
			stop(ErrDrained)
		case <-lctx.Done():
		}
	}()
	lock, err := s.store.Lock(lctx)
	switch {
	case err == nil || ctx.Err() != nil:
		return lock, err
	case errors.Is(context.Cause(lctx), ErrDrained):
		return nil, ErrDrained
	case errors.Is(err, context.DeadlineExceeded):
		return nil, warehouse.ErrLocked
	}
	return lock, err
}

// openStores renders the statements of the warehouse's users, dimensions
// and personal data for store's schema, once.
func (s *Syncer) openStores(store *warehouse.Store, policy *normalize.Policy) error {
	var err error
	if s.personal, err = pii.New(store, policy); err != nil {
		return err
	}
	if s.users, err = users.New(store); err != nil {
		return err
	}
	s.users.WriteUnder(s.personal)
	s.dims, err = dimensions.New(store)
	return err
}

package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// DefaultAccount names the account of the USERSYNC_* configuration: an
// account like the registered ones but for where its settings are read.
// Its jobs carry no account in their arguments (the stored form of earlier
// releases, whose jobs left queued thus run as its own).
const DefaultAccount = "default"

// AccountName is the account a job's Account argument names.
func AccountName(arg string) string { return cmp.Or(arg, DefaultAccount) }

// accountArg is what a job of the account named name carries.
func accountArg(name string) string {
	if name == DefaultAccount {
		return ""
	}
	return name
}

// Account is what the jobs of one account run with.
type Account struct {
	Name   string
	Syncer *syncer.Syncer
	Store  *warehouse.Store
	// Snapshot writes a Parquet snapshot, unless nothing changed since the
	// last one; nil disables the account's snapshot jobs.
	Snapshot func(ctx context.Context) (SnapshotOutcome, error)
	// SnapshotAfterSync enqueues a snapshot after each successful sync,
	// backfill or reconcile.
	SnapshotAfterSync bool
	// AuthRemedy says what to do when the API refuses the credentials (run
	// usersync auth login, check USERSYNC_API_TOKEN), for the error logged.
	AuthRemedy string
	// MaxDeleteShare is the reconcile safety valve (0: the default, 5%).
	MaxDeleteShare float64
	// ReconcileMembership is syncer.ReconcileRequest.Membership.
	ReconcileMembership string
	// Logger carries account=Name; nil: Deps.Logger with it.
	Logger *slog.Logger
	// Guard is the condition that the account is still as it was opened
	// (registered, not paused, the same settings), which a sync that
	// changed nothing checks in its one statement (syncer.Quiet); nil for
	// the environment's account, which cannot change.
	Guard *warehouse.Guard
}

// Errors of AccountSource.Open for an account whose jobs must not run: the
// job is cancelled, and the account's data is left as it is.
var (
	ErrAccountPaused  = errors.New("the account is paused (usersync accounts resume)")
	ErrAccountRemoved = errors.New("the account is not registered (removed, or never added)")
)

// AccountSource opens an account for a job: jobs/fleet implements it over the
// registry. Open returns ErrAccountPaused or ErrAccountRemoved (wrapped)
// for an account whose jobs must not run.
type AccountSource interface {
	Open(ctx context.Context, name string) (*Account, error)
	// Opened returns the account when it is open already, reading nothing,
	// or nil: its Guard then stands for Open's checks.
	Opened(name string) *Account
}

// Registered is an account as the fleet's tick and the metrics see it: a
// registered one, or the environment's.
type Registered struct {
	Name   string
	Paused bool
	// Env says its settings are read from the environment (the default
	// account), not from the registry.
	Env   bool
	Store *warehouse.Store
	// Schedules are the account's; the tick inserts its due jobs.
	Schedules Schedules
	// SnapshotInterval is the longest wait between two snapshots the
	// account's schedules promise (ScheduleInterval); 0 when none is.
	SnapshotInterval time.Duration
	// SyncInterval is the same of its syncs: the stale alert judges the
	// account against its own schedule.
	SyncInterval time.Duration
	// Snapshots says whether the account's snapshots are written.
	Snapshots bool
}

// ListAccounts returns the accounts, the environment's first when it is
// configured, paused ones included. The fleet implements it over the
// registry, read in tx when tx is not nil: the tick reads and inserts in
// one transaction.
type ListAccounts func(ctx context.Context, tx pgx.Tx) ([]Registered, error)

// account returns the account of a job whose Account argument is arg, from
// Deps.Accounts. A job that must not run, or whose account cannot be opened
// now, gets the error River should act on.
func (d *Deps) account(ctx context.Context, job *rivertype.JobRow, arg string) (*Account, error) {
	name := AccountName(arg)
	var a *Account
	err := ErrAccountRemoved
	if d.Accounts != nil {
		a, err = d.Accounts.Open(ctx, name)
	}
	logger := d.Logger.With("account", name)
	if err != nil {
		attrs := []any{"job_id", job.ID, "kind", job.Kind, "error", err.Error()}
		if errors.Is(err, ErrAccountPaused) || errors.Is(err, ErrAccountRemoved) {
			logger.InfoContext(ctx, "the job's account is paused or removed: the job is cancelled, the account's data is left as it is", attrs...)
			return nil, river.JobCancel(err)
		}
		logger.WarnContext(ctx, "could not open the job's account; the job retries", attrs...)
		return nil, fmt.Errorf("opening account %s: %w", name, err)
	}
	if a.Logger == nil {
		a.Logger = logger
	}
	return a, nil
}

package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// runsEnv is a migrated warehouse synced from the simulated API, and the
// metrics of a worker on it.
type runsEnv struct {
	store   *warehouse.Store
	syncer  *syncer.Syncer
	metrics *Metrics
	deps    *Deps
}

func newRunsEnv(t *testing.T) *runsEnv {
	t.Helper()
	ctx := context.Background()
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 3, Users: 120}))
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 6)
	name := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatal(err)
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: srv.URL, Auth: jsonapi.StaticToken("test-token")})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	s, err := syncer.New(client, store, syncer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &runsEnv{store: store, syncer: s}
	e.metrics = NewMetrics(MetricsConfig{Pool: pool, Store: store, Schema: name, RiverSchema: RiverSchema(name), Logger: logger})
	e.deps = &Deps{Accounts: envAccount{&Account{Name: DefaultAccount, Syncer: e.syncer, Store: store}}, Drain: make(chan struct{}), Observe: e.metrics.Observe,
		ObserveReconcile: e.metrics.ObserveReconcile, Logger: logger}
	if _, err := e.syncer.Run(ctx, syncer.Request{Kind: warehouse.KindFull}); err != nil {
		t.Fatalf("the first full sync: %v", err)
	}
	return e
}

// count returns the value of the counter (or the sample count of the
// histogram) name whose labels are labels (`a="x",b="y"`) and this
// deployment's schema (and account="default" unless labels name another);
// 0 when it has no such series.
func (e *runsEnv) count(t *testing.T, name, labels string) float64 {
	t.Helper()
	want := map[string]string{"schema": e.store.Schema(), "account": DefaultAccount}
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = strings.Trim(v, `"`)
	}
	mfs, err := e.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if mf.GetName() != name || !maps.Equal(got, want) {
				continue
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestLockWaitIsNotARun: a reconcile job that finds the sync lock held
// (it was counted as a 0.0006 s run) counts a lock wait,
// not a run, and adds nothing to the durations; the same job run once the
// lock is free counts a run.
func TestLockWaitIsNotARun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newRunsEnv(t)
	w := &ReconcileWorker{d: e.deps}
	job := &river.Job[ReconcileArgs]{JobRow: &rivertype.JobRow{ID: 1, Kind: KindReconcile, Attempt: 1}}

	lock, err := e.store.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var snooze *river.JobSnoozeError
	if err := w.Work(ctx, job); !errors.As(err, &snooze) {
		t.Fatalf("a reconcile with the lock held ended with %v, want a snooze", err)
	}
	lock.Release()
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"usersync_lock_waits_total", `kind="reconcile"`, 1},
		{"usersync_runs_total", `kind="reconcile",status="snoozed"`, 0},
		{"usersync_run_duration_seconds", `kind="reconcile"`, 0},
	} {
		if got := e.count(t, c.name, c.labels); got != c.want {
			t.Errorf("with the lock held: %s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	if err := w.Work(ctx, job); err != nil {
		t.Fatalf("the reconcile with the lock free: %v", err)
	}
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"usersync_lock_waits_total", `kind="reconcile"`, 1},
		{"usersync_runs_total", `kind="reconcile",status="succeeded"`, 1},
		{"usersync_run_duration_seconds", `kind="reconcile"`, 1},
	} {
		if got := e.count(t, c.name, c.labels); got != c.want {
			t.Errorf("after the lock was freed: %s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// A sync that found the lock held (after a wait, as a job of an earlier
	// release waited 20 s) is no run either.
	e.metrics.Observe(DefaultAccount, MetricIncremental, syncer.Summary{}, fmt.Errorf("syncing users: %w", warehouse.ErrLocked), 20*time.Second)
	if got := e.count(t, "usersync_run_duration_seconds", `kind="incremental"`); got != 0 {
		t.Errorf("a sync that found the lock held is counted in the durations %v times", got)
	}
	if got := e.count(t, "usersync_lock_waits_total", `kind="incremental"`); got != 1 {
		t.Errorf("usersync_lock_waits_total{kind=incremental} = %v, want 1", got)
	}
}

// TestEverySeriesNamesItsDeployment: every series the worker exports carries
// schema=USERSYNC_SCHEMA, its own and the Go runtime's alike, so
// two deployments in one Prometheus never mix.
func TestEverySeriesNamesItsDeployment(t *testing.T) {
	t.Parallel()
	e := newRunsEnv(t)
	e.metrics.Observe(DefaultAccount, MetricIncremental, syncer.Summary{}, nil, time.Second)
	mfs, err := e.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 20 {
		t.Fatalf("gathered %d metric families, want the worker's and the runtime's", len(mfs))
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			schema := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "schema" {
					schema = l.GetValue()
				}
			}
			if schema != e.store.Schema() {
				t.Errorf("%s %v: schema label %q, want %q", mf.GetName(), m.GetLabel(), schema, e.store.Schema())
			}
		}
	}
}

// envAccount opens its one account, as the fleet opens the environment's.
type envAccount struct{ a *Account }

func (s envAccount) Opened(string) *Account { return nil }

func (s envAccount) Open(_ context.Context, name string) (*Account, error) {
	if name != s.a.Name {
		return nil, ErrAccountRemoved
	}
	return s.a, nil
}

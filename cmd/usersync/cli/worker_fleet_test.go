package cli

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestWorkerFleetOpensAccounts (#41, point 2): the worker's fleet opens each
// registered account with its own configuration (its API, its schema, its
// logger naming it): a run through it mirrors the account's API into the
// account's warehouse. An opened account is kept for its next jobs, rebuilt
// when its settings change, and at most USERSYNC_ACCOUNT_CACHE are kept
// (the least recently used closed, its API counters kept). A paused
// account's job is refused with jobs.ErrAccountPaused, an unknown one's with
// jobs.ErrAccountRemoved, one whose stored settings no longer parse with
// their error; Registered lists every account but the default one and
// those.
func TestWorkerFleetOpensAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newCLIEnv(t, apisim.Options{Seed: 51, Users: 120})
	b := newCLIEnv(t, apisim.Options{Seed: 52, Users: 80})
	cfgA, cfgB := mustConfig(t, a.env), mustConfig(t, b.env)
	cfgA.SyncSchedule, cfgB.SyncSchedule = "@every 5m", "off"
	logs := &syncBuffer{}
	e := &env{cfg: mustConfig(t, a.env), logger: slog.New(slog.NewTextHandler(logs, nil)), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	e.cfg.SnapshotDir = "off"
	pool := schematest.NewPool(t, 4)
	metrics := jobs.NewMetrics(jobs.MetricsConfig{Pool: pool, Store: a.store, Schema: "fleet", RiverSchema: jobs.RiverSchema(a.store.Schema()),
		Logger: e.logger})
	f := newFleet(e, pool, metrics, &jobs.Account{Name: jobs.DefaultAccount})
	f.max = 2
	broken := errors.New("account x: USERSYNC_SYNC_SCHEDULE is not a valid schedule")
	accounts := []account{{Name: "default", Cfg: e.cfg}, {Name: "a", Cfg: cfgA}, {Name: "b", Cfg: cfgB}, {Name: "p", Cfg: cfgB, Paused: true},
		{Name: "x", Err: broken}}
	f.load = func(context.Context, *env, *pgxpool.Pool) ([]account, error) { return accounts, nil }

	for _, c := range []struct {
		name string
		env  *cliEnv
	}{{"a", a}, {"b", b}} {
		acct, err := f.Open(ctx, c.name)
		if err != nil {
			t.Fatalf("opening %s: %v", c.name, err)
		}
		if _, err := acct.Syncer.Run(ctx, syncer.Request{Kind: warehouse.KindFull}); err != nil {
			t.Fatalf("a full sync of %s: %v", c.name, err)
		}
		syncertest.AssertMirrors(t, c.env.sim, c.env.store)
		if again, _ := f.Open(ctx, c.name); again != acct {
			t.Errorf("%s was opened again for its next job instead of kept", c.name)
		}
	}
	if !strings.Contains(logs.String(), "account=a") || !strings.Contains(logs.String(), "account=b") {
		t.Errorf("the accounts' runs do not log their names:\n%s", logs.String())
	}
	first, _ := f.Open(ctx, "a")
	accounts[1].Cfg.PageSize = 50
	changed, _ := f.Open(ctx, "a")
	if changed == first {
		t.Fatal("a's settings changed and it was not opened again")
	}
	if _, err := changed.Syncer.Run(ctx, syncer.Request{Kind: warehouse.KindIncremental}); err != nil {
		t.Fatal(err)
	}
	requests := apiRequests(t, metrics, "a")
	f.max = 1
	accounts[2].Cfg.PageSize = 60
	_, _ = f.Open(ctx, "b") // opened again, which closes a, the least recently used
	if f.order.Len() != 1 || f.open["a"] != nil {
		t.Errorf("%d accounts kept open with a bound of 1", f.order.Len())
	}
	if got := apiRequests(t, metrics, "a"); got != requests || requests == "" {
		t.Errorf("a's API requests: %q once closed, %q before", got, requests)
	}
	for name, want := range map[string]error{"p": jobs.ErrAccountPaused, "gone": jobs.ErrAccountRemoved, "x": broken} {
		if _, err := f.Open(ctx, name); !errors.Is(err, want) {
			t.Errorf("opening %s: %v, want %v", name, err, want)
		}
	}
	reg, err := f.Registered(ctx)
	// x, whose settings no longer parse, is left out (logged): the others
	// are scheduled as ever.
	if err != nil || len(reg) != 3 || reg[0].Name != "a" || reg[0].Schedules.Sync == nil || reg[1].Schedules.Sync != nil || !reg[2].Paused {
		t.Errorf("Registered: %+v, %v", reg, err)
	}
}

func mustConfig(t *testing.T, env map[string]string) Config {
	t.Helper()
	cfg, err := configFor(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// apiRequests is the value of usersync_api_requests_total{account, status=200}.
func apiRequests(t *testing.T, m *jobs.Metrics, account string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	got := regexp.MustCompile(`(?m)^usersync_api_requests_total\{account="` + account + `",schema="fleet",status="200"\} (\d+)`).FindStringSubmatch(rec.Body.String())
	if got == nil {
		return ""
	}
	return got[1]
}

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
	"github.com/usersync/usersync/jobs/fleet"
	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// testFleet is a worker's fleet over a real registry: the default account
// of newCLIEnv (migrated, so its registry exists) and the accounts a test
// registers.
type testFleet struct {
	e       *env
	f       *fleet.Fleet
	reg     *accounts.Registry
	pool    *pgxpool.Pool
	logs    *syncBuffer
	metrics *jobs.Metrics
}

func newTestFleet(t *testing.T) *testFleet {
	t.Helper()
	def := newCLIEnv(t, apisim.Options{Seed: 50, Users: 10})
	logs := &syncBuffer{}
	e := &env{cfg: mustConfig(t, def.env), logger: slog.New(slog.NewTextHandler(logs, nil)), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	e.cfg.SnapshotDir = "off"
	pool := schematest.NewPool(t, 12) // as many accounts as the tests sync at once, each a few connections
	reg, err := accounts.New(pool, e.riverSchema())
	if err != nil {
		t.Fatal(err)
	}
	metrics := jobs.NewMetrics(jobs.MetricsConfig{Pool: pool, Store: def.store, Schema: "fleet", RiverSchema: e.riverSchema(), Logger: e.logger})
	f, err := newFleet(e, pool, metrics, jobs.Schedules{})
	if err != nil {
		t.Fatal(err)
	}
	return &testFleet{e: e, f: f, reg: reg, pool: pool, logs: logs, metrics: metrics}
}

// add registers account name served by c (its API, its token, its schema),
// with more settings.
func (tf *testFleet) add(t *testing.T, name string, c *cliEnv, more map[string]string) {
	t.Helper()
	s := map[string]string{"USERSYNC_SCHEMA": c.store.Schema(), "USERSYNC_API_URL": c.env["USERSYNC_API_URL"],
		"USERSYNC_API_TOKEN": c.env["USERSYNC_API_TOKEN"]}
	for k, v := range more {
		s[k] = v
	}
	if err := tf.reg.Add(context.Background(), accounts.Account{Name: name, Settings: s}); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerFleetOpensAccounts: the worker's fleet opens each
// registered account with its own configuration (its API, its schema, its
// logger naming it): a run through it mirrors the account's API into the
// account's warehouse. An opened account is kept for its next jobs, rebuilt
// when its stored settings change, and at most USERSYNC_ACCOUNT_CACHE are
// kept (the least recently used closed, its API counters kept). A paused
// account's job is refused with jobs.ErrAccountPaused, an unknown one's with
// jobs.ErrAccountRemoved, one whose stored settings no longer parse with
// their error; Registered lists every account but the default one and
// those.
func TestWorkerFleetOpensAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tf := newTestFleet(t)
	f := tf.f
	f.SetCache(2)
	a := newCLIEnv(t, apisim.Options{Seed: 51, Users: 120})
	b := newCLIEnv(t, apisim.Options{Seed: 52, Users: 80})
	tf.add(t, "a", a, map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 5m"})
	tf.add(t, "b", b, map[string]string{"USERSYNC_SYNC_SCHEDULE": "off"})
	tf.add(t, "p", b, map[string]string{"USERSYNC_SCHEMA": schematest.NewSchemaName(t, tf.pool)})
	tf.add(t, "x", b, map[string]string{"USERSYNC_SCHEMA": schematest.NewSchemaName(t, tf.pool), "USERSYNC_SYNC_SCHEDULE": "every now and then"})
	if err := tf.reg.Pause(ctx, "p"); err != nil {
		t.Fatal(err)
	}

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
	if !strings.Contains(tf.logs.String(), "account=a") || !strings.Contains(tf.logs.String(), "account=b") {
		t.Errorf("the accounts' runs do not log their names:\n%s", tf.logs.String())
	}
	first, _ := f.Open(ctx, "a")
	if err := tf.reg.UpdateSettings(ctx, "a", map[string]string{"USERSYNC_PAGE_SIZE": "50"}); err != nil {
		t.Fatal(err)
	}
	changed, _ := f.Open(ctx, "a")
	if changed == first {
		t.Fatal("a's settings changed and it was not opened again")
	}
	if _, err := changed.Syncer.Run(ctx, syncer.Request{Kind: warehouse.KindIncremental}); err != nil {
		t.Fatal(err)
	}
	requests := apiRequests(t, tf.metrics, "a")
	f.SetCache(1)
	if err := tf.reg.UpdateSettings(ctx, "b", map[string]string{"USERSYNC_PAGE_SIZE": "60"}); err != nil {
		t.Fatal(err)
	}
	_, _ = f.Open(ctx, "b") // opened again, which closes a, the least recently used
	if cached := f.Cached(); len(cached) != 1 || cached[0] != "b" {
		t.Errorf("%v kept open with a bound of 1, want b", cached)
	}
	if got := apiRequests(t, tf.metrics, "a"); got != requests || requests == "" {
		t.Errorf("a's API requests: %q once closed, %q before", got, requests)
	}
	for name, want := range map[string]error{"p": jobs.ErrAccountPaused, "gone": jobs.ErrAccountRemoved} {
		if _, err := f.Open(ctx, name); !errors.Is(err, want) {
			t.Errorf("opening %s: %v, want %v", name, err, want)
		}
	}
	if _, err := f.Open(ctx, "x"); err == nil || !strings.Contains(err.Error(), "account x: USERSYNC_SYNC_SCHEDULE") {
		t.Errorf("opening x, whose schedule does not parse: %v", err)
	}
	reg, err := f.Registered(ctx, nil)
	// x, whose settings no longer parse, is left out (logged): the others
	// are scheduled as ever.
	// The environment's account is listed first, as the others.
	if err != nil || len(reg) != 4 || reg[0].Name != jobs.DefaultAccount || !reg[0].Env || reg[1].Name != "a" || reg[1].Schedules.Sync == nil ||
		reg[2].Schedules.Sync != nil || !reg[3].Paused {
		t.Errorf("Registered: %+v, %v", reg, err)
	}
}

func mustConfig(t *testing.T, env map[string]string) config.Config {
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

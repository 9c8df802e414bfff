package syncer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/internal/alonetest"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// testEnv is a simulator over real HTTP, a client, and a migrated schema.
type testEnv struct {
	tb     testing.TB // fails on a Syncer that cannot be made (syncer)
	sim    *apisim.Server
	srv    *httptest.Server
	client *jsonapi.Client
	store  *warehouse.Store
}

func newEnv(t *testing.T, opts apisim.Options) *testEnv {
	t.Helper()
	return newEnvWith(t, opts, nil)
}

// newEnvWith is newEnv with the simulator behind wrap (nil: none).
func newEnvWith(t *testing.T, opts apisim.Options, wrap func(*apisim.Server) http.Handler) *testEnv {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = 7
	}
	sim := apisim.New(opts)
	var h http.Handler = sim
	if wrap != nil {
		h = wrap(sim)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	store := migratedStore(t, schematest.NewPool(t, 8))
	return &testEnv{tb: t, sim: sim, srv: srv, client: newClient(t, srv.URL, jsonapi.StaticToken("test-token")), store: store}
}

// migratedStore migrates a schema of the test's own in pool and returns
// its store.
func migratedStore(tb testing.TB, pool *pgxpool.Pool) *warehouse.Store {
	tb.Helper()
	name := schematest.NewSchemaName(tb, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		tb.Fatal(err)
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		tb.Fatal(err)
	}
	return store
}

func newClient(t *testing.T, url string, auth jsonapi.Authenticator) *jsonapi.Client {
	t.Helper()
	c, err := jsonapi.NewClient(jsonapi.Options{BaseURL: url, Auth: auth, UserAgent: "usersync-test",
		BackoffBase: time.Millisecond, BackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *testEnv) syncer(cfg syncer.Config) *syncer.Syncer {
	return mustNew(e.tb, e.client, e.store, cfg)
}

// mustNew is syncer.New, failing tb on its error.
func mustNew(tb testing.TB, client *jsonapi.Client, store *warehouse.Store, cfg syncer.Config) *syncer.Syncer {
	tb.Helper()
	s, err := syncer.New(client, store, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func (e *testEnv) run(t *testing.T, cfg syncer.Config, req syncer.Request) syncer.Summary {
	t.Helper()
	sum, err := runAlone(t, context.Background(), e.syncer(cfg), req)
	if err != nil {
		t.Fatalf("%s run: %v", req.Kind, err)
	}
	return sum
}

func (e *testEnv) count(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	q := fmt.Sprintf(sql, pgx.Identifier{e.store.Schema()}.Sanitize())
	if err := e.store.Pool().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (e *testEnv) assertMirrors(t *testing.T) {
	t.Helper()
	syncertest.AssertMirrors(t, e.sim, e.store)
}

// runAlone runs s and fails the test if a goroutine of the run outlives
// it: whatever way a run ends, nothing of it goes on.
func runAlone(t *testing.T, ctx context.Context, s *syncer.Syncer, req syncer.Request) (sum syncer.Summary, err error) {
	t.Helper()
	alonetest.Run(t, ctx, func(ctx context.Context) { sum, err = s.Run(ctx, req) })
	return sum, err
}

// reconcileAlone is runAlone for a reconcile.
func reconcileAlone(t *testing.T, ctx context.Context, s *syncer.Syncer, req syncer.ReconcileRequest) (sum syncer.ReconcileSummary, err error) {
	t.Helper()
	alonetest.Run(t, ctx, func(ctx context.Context) { sum, err = s.Reconcile(ctx, req) })
	return sum, err
}

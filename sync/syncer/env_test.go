package syncer_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// testEnv is a simulator over real HTTP, a client, and a migrated schema.
type testEnv struct {
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
	pool := schematest.NewPool(t, 8)
	name := schematest.NewSchemaName(t, pool)
	ctx := context.Background()
	if _, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatal(err)
	}
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{sim: sim, srv: srv, client: newClient(t, srv.URL, jsonapi.StaticToken("test-token")), store: store}
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
	return syncer.New(e.client, e.store, cfg)
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

// runAlone runs s and fails the test if a goroutine the run started is
// still running usersync code once Run has returned (a walk fetching ahead,
// a writer, a COPY's encoder): whatever way a run ends, nothing of it goes
// on. Goroutines inherit the profiler labels of the one that starts them,
// so the run's are those with the label runAlone gives it.
func runAlone(t *testing.T, ctx context.Context, s *syncer.Syncer, req syncer.Request) (sum syncer.Summary, err error) {
	t.Helper()
	const key = "usersync_test_run"
	id := rand.Text()
	pprof.Do(ctx, pprof.Labels(key, id), func(ctx context.Context) { sum, err = s.Run(ctx, req) })
	// A goroutine may still be returning after its last effect (a closed
	// channel): what is left after a second is left for good.
	left := runningWith(key, id)
	for wait := time.Millisecond; len(left) > 0 && wait < time.Second; wait *= 2 {
		time.Sleep(wait)
		left = runningWith(key, id)
	}
	if len(left) > 0 {
		t.Errorf("goroutines of the %s run outlived it (count @ stack):\n%s", req.Kind, strings.Join(left, "\n\n"))
	}
	return sum, err
}

// runningWith returns the stacks of the goroutines labelled k=v that are
// in usersync code.
func runningWith(k, v string) []string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	want := fmt.Sprintf("# labels: {%q:%q}", k, v)
	var left []string
	for _, stack := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(stack, want) && strings.Contains(stack, "github.com/usersync/usersync/") {
			left = append(left, stack)
		}
	}
	return left
}

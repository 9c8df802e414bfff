package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// newRiverSchema creates a fresh River schema and returns the
// environment's schema's name and its (schematest drops both).
func newRiverSchema(t *testing.T, pool *pgxpool.Pool) (envSchema, river string) {
	t.Helper()
	envSchema = schematest.NewSchemaName(t, pool)
	river = envSchema + "_river"
	if _, err := pool.Exec(context.Background(), `CREATE SCHEMA "`+river+`"`); err != nil {
		t.Fatal(err)
	}
	return envSchema, river
}

// newRegistry migrates a fleet's registry into a fresh River schema and
// returns it with the environment's schema and the River schema's name.
func newRegistry(t *testing.T, pool *pgxpool.Pool) (*accounts.Registry, string, string) {
	t.Helper()
	envSchema, river := newRiverSchema(t, pool)
	reg, err := accounts.New(pool, river)
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return reg, envSchema, river
}

// testSpec resolves an account whose settings are a schema alone; opening
// it counts the builds of name.
func testSpec(name, schema string, builds map[string]int, mu *sync.Mutex) Spec {
	return Spec{Name: name, Schema: schema, Open: func(_ context.Context, store *warehouse.Store) (*jobs.Account, *jsonapi.Client, error) {
		mu.Lock()
		builds[name]++
		mu.Unlock()
		return &jobs.Account{Name: name, Store: store}, nil, nil
	}}
}

// TestFleetOneAccountModel: the environment's account is listed first and
// opened by the same code as the registered ones (kept open between jobs,
// within the cache's bound); a registered account is rebuilt when its
// settings change, refused when paused or removed, and left out of the
// listing, with one warning per change, when its settings are not valid.
func TestFleetOneAccountModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	reg, envSchema, river := newRegistry(t, pool)
	builds, mu := map[string]int{}, &sync.Mutex{}
	logs := &logBuffer{}
	f, err := New(Config{Pool: pool, RiverSchema: river, Cache: 2, Env: testSpec(jobs.DefaultAccount, envSchema, builds, mu),
		Resolve: func(_ context.Context, a accounts.Account) (Spec, error) {
			if v, ok := a.Settings["USERSYNC_PAGE_SIZE"]; ok && v == "lots" {
				return Spec{}, errors.New("account " + a.Name + ": USERSYNC_PAGE_SIZE is not a number")
			}
			return testSpec(a.Name, a.Settings["USERSYNC_SCHEMA"], builds, mu), nil
		},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "p", "x"} {
		s := map[string]string{"USERSYNC_SCHEMA": schematest.NewSchemaName(t, pool)}
		if name == "x" {
			s["USERSYNC_PAGE_SIZE"] = "lots"
		}
		if err := reg.Add(ctx, accounts.Account{Name: name, Settings: s}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Pause(ctx, "p"); err != nil {
		t.Fatal(err)
	}

	for i := range 4 { // four ticks, every other one in a transaction as the tick's
		list, err := registeredIn(ctx, t, pool, f, i%2 == 1)
		var names []string
		for _, r := range list {
			names = append(names, r.Name)
		}
		if err != nil || strings.Join(names, ",") != "default,a,b,p" || !list[0].Env || list[1].Env || !list[3].Paused {
			t.Fatalf("Registered: %v, %v", names, err)
		}
	}
	if n := strings.Count(logs.String(), "account=x"); n != 1 {
		t.Errorf("x's settings that are not valid were warned about %d times in 4 ticks, want once", n)
	}

	def, err := f.Open(ctx, jobs.DefaultAccount)
	if err != nil || def.Name != jobs.DefaultAccount || def.Store.Schema() != envSchema {
		t.Fatalf("opening the environment's account: %+v, %v", def, err)
	}
	if again, _ := f.Open(ctx, ""); again != nil {
		t.Errorf("an empty name opened %+v: only AccountName's default maps to the environment's", again)
	}
	if again, _ := f.Open(ctx, jobs.DefaultAccount); again != def {
		t.Error("the environment's account was built again for its next job instead of kept")
	}
	a, err := f.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.UpdateSettings(ctx, "a", map[string]string{"USERSYNC_SYNC_SCHEDULE": "@hourly"}); err != nil {
		t.Fatal(err)
	}
	if changed, _ := f.Open(ctx, "a"); changed == a || builds["a"] != 2 {
		t.Errorf("a's settings changed: built %d times, want 2", builds["a"])
	}
	if _, err := f.Open(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if cached := f.Cached(); strings.Join(cached, ",") != "b,a" {
		t.Errorf("kept open: %v, want b,a (the environment's, least recently used, closed)", cached)
	}
	if _, err := f.Open(ctx, jobs.DefaultAccount); err != nil || builds[jobs.DefaultAccount] != 2 {
		t.Errorf("the environment's account, closed, was built %d times in all, want 2 (%v)", builds[jobs.DefaultAccount], err)
	}
	for name, want := range map[string]error{"p": jobs.ErrAccountPaused, "gone": jobs.ErrAccountRemoved} {
		if _, err := f.Open(ctx, name); !errors.Is(err, want) {
			t.Errorf("opening %s: %v, want %v", name, err, want)
		}
	}
	if _, err := f.Open(ctx, "x"); err == nil || !strings.Contains(err.Error(), "USERSYNC_PAGE_SIZE") {
		t.Errorf("opening x: %v, want its settings' error", err)
	}

	// Opened reads nothing: an open account, a registered one with the
	// registry's guard for the settings it was opened with.
	if o := f.Opened("p"); o != nil {
		t.Errorf("Opened returned the paused account p, never opened: %+v", o)
	}
	b := f.Opened("b")
	if b == nil || b.Guard == nil || b.Guard.Args["guard_account"] != "b" {
		t.Fatalf("Opened(b) = %+v, want b with its guard", b)
	}
	if h, err := reg.Head(ctx, "b"); err != nil || b.Guard.Args["guard_stamp"] != h.Stamp {
		t.Errorf("b's guard holds stamp %v, its head's is %q (%v)", b.Guard.Args["guard_stamp"], h.Stamp, err)
	}
	if d := f.Opened(jobs.DefaultAccount); d == nil || d.Guard != nil {
		t.Errorf("Opened(default) = %+v, want the environment's account without a guard", d)
	}
}

// registeredIn lists f's accounts, in a transaction when inTx, which must
// still be usable after.
func registeredIn(ctx context.Context, t *testing.T, pool *pgxpool.Pool, f *Fleet, inTx bool) ([]jobs.Registered, error) {
	t.Helper()
	if !inTx {
		return f.Registered(ctx, nil)
	}
	var list []jobs.Registered
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if list, err = f.Registered(ctx, tx); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT 1")
		return err
	})
	return list, err
}

// TestFleetListsInATransactionBeforeTheRegistryIsMade: before usersync
// migrate makes the registry, the tick's listing in its transaction is the
// environment's account alone, and leaves the transaction usable.
func TestFleetListsInATransactionBeforeTheRegistryIsMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 2)
	envSchema, river := newRiverSchema(t, pool)
	f, err := New(Config{Pool: pool, RiverSchema: river, Cache: 2, Env: testSpec(jobs.DefaultAccount, envSchema, map[string]int{}, &sync.Mutex{}),
		Resolve: func(context.Context, accounts.Account) (Spec, error) {
			return Spec{}, errors.New("no account is registered")
		},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, inTx := range []bool{true, false} {
		list, err := registeredIn(ctx, t, pool, f, inTx)
		if err != nil || len(list) != 1 || list[0].Name != jobs.DefaultAccount {
			t.Fatalf("listing (in a transaction: %v) with no registry: %v, %v; want the environment's account alone", inTx, list, err)
		}
	}
}

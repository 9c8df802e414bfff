package tokens

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/sqlfile/golden"
)

// TestTokenStoreGrant: SaveGrant keeps the refresh token, access token,
// expiry and scope; Info reports the expiry, the scope, when the refresh
// token last changed (not when only the access token did) and the last
// refresh failure until a grant is saved again, and nothing for another
// credential.
func TestTokenStoreGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	name := migratedSchema(t, pool)
	ts, err := New(pool, name, "https://api.example.com/oauth/token", "cid")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := ts.Info(ctx); err != nil || info.Stored || info.RotatedAt != nil || info.AccessExpiresAt != nil {
		t.Fatalf("empty store: %+v %v", info, err)
	}
	exp := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	if err := ts.SaveGrant(ctx, "rt-1", "at-1", exp, "users.read teams.read"); err != nil {
		t.Fatal(err)
	}
	info, err := ts.Info(ctx)
	if err != nil || !info.Stored || info.RotatedAt == nil || info.AccessExpiresAt == nil || !info.AccessExpiresAt.Equal(exp) {
		t.Fatalf("after SaveGrant: %+v %v", info, err)
	}
	if rt, _ := ts.Load(ctx); rt != "rt-1" {
		t.Errorf("Load = %q", rt)
	}
	var access string
	if err := pool.QueryRow(ctx, `SELECT access_token FROM "`+name+`".oauth_tokens`).Scan(&access); err != nil || access != "at-1" {
		t.Errorf("access_token %q %v", access, err)
	}
	// A refresh that did not rotate: the expiry moves, the rotation time not.
	exp2 := exp.Add(time.Hour)
	if err := ts.SaveGrant(ctx, "rt-1", "at-2", exp2, ""); err != nil {
		t.Fatal(err)
	}
	info2, _ := ts.Info(ctx)
	if !info2.RotatedAt.Equal(*info.RotatedAt) || !info2.AccessExpiresAt.Equal(exp2) || info2.Scope != "users.read teams.read" {
		t.Errorf("unrotated refresh (no scope said: the stored one stays): %+v, before %+v", info2, info)
	}
	// A refusal is kept, with when, until a grant works again.
	if err := ts.SaveRefreshFailure(ctx, "invalid_grant", "refreshing OAuth token: invalid_grant"); err != nil {
		t.Fatal(err)
	}
	if f, _ := ts.Info(ctx); f.RefreshFailure == nil || f.RefreshFailure.Code != "invalid_grant" || time.Since(f.RefreshFailure.At) > time.Minute ||
		f.RefreshFailure.Error != "refreshing OAuth token: invalid_grant" || !f.Stored {
		t.Errorf("after a refusal: %+v", f)
	}
	// A rotation moves it; an unknown expiry is stored as unknown.
	if err := ts.SaveGrant(ctx, "rt-2", "at-3", time.Time{}, "users.read"); err != nil {
		t.Fatal(err)
	}
	info3, _ := ts.Info(ctx)
	if !info3.RotatedAt.After(*info.RotatedAt) || info3.AccessExpiresAt != nil || info3.RefreshFailure != nil || info3.Scope != "users.read" {
		t.Errorf("rotation: %+v, before %+v", info3, info)
	}
	other, err := New(pool, name, "https://api.example.com/oauth/token", "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SaveRefreshFailure(ctx, "", "no answer"); err != nil {
		t.Fatal(err)
	}
	if other, err := other.Info(ctx); err != nil || other.Stored || other.RefreshFailure != nil {
		t.Errorf("another client's credential: %+v %v", other, err)
	}
}

var update = flag.Bool("update", false, "rewrite "+golden.File)

// TestStatementsGolden keeps testdata/statements.golden.sql, every statement
// of the package rendered for schema usersync, true.
func TestStatementsGolden(t *testing.T) {
	q, err := newStatements("usersync")
	if err != nil {
		t.Fatal(err)
	}
	g := golden.New("./sync/warehouse/tokens")
	g.Add("tokens", q)
	g.Check(t, *update)
}

// migratedSchema migrates a fresh warehouse schema and returns its name.
func migratedSchema(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	name := schematest.NewSchemaName(t, pool)
	if err := warehouse.WithMigrationLock(context.Background(), pool, func(ctx context.Context) error {
		_, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

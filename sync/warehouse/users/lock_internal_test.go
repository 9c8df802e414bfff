package users

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

// TestPageLockWaitIsBounded: a page whose rows another transaction holds
// fails after the lock timeout instead of waiting for ever (two pages
// written at once would otherwise hang, PostgreSQL not seeing that the
// writer waits for one of them).
func TestPageLockWaitIsBounded(t *testing.T) {
	t.Parallel()
	s, pool, name := copyStore(t)
	var err error
	if s.sql, err = newUserSQL(name, s.table, "200ms"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	page := `{"data": [{"id": 1, "type": "user", "attributes": {"title": "a"}}]}`
	if _, err := s.Write(ctx, warehousetest.Rows(t, schema.User(), page), nil, nil); err != nil {
		t.Fatal(err)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, `SELECT 1 FROM `+s.q+`.users WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	changed := `{"data": [{"id": 1, "type": "user", "attributes": {"title": "b"}}]}`
	_, err = s.Write(ctx, warehousetest.Rows(t, schema.User(), changed), nil, nil)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("err = %v, want a lock timeout (55P03)", err)
	}
}

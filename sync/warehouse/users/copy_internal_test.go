package users

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

// copyStore is a Store on a migrated schema of its own (see warehousetest.Migrated).
func copyStore(t *testing.T) (*Store, *pgxpool.Pool, string) {
	t.Helper()
	pool, name := warehousetest.Migrated(t, "")
	s, err := newStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return s, pool, name
}

// TestCopyWrongGoType loads rows holding a value of a Go type normalize never
// gives: the load fails with an error naming the column, and the store stays
// usable.
func TestCopyWrongGoType(t *testing.T) {
	t.Parallel()
	s, _, _ := copyStore(t)
	ctx := context.Background()
	title := -1
	for i, a := range schema.User().Attributes {
		if a.Name == "title" {
			title = i
		}
	}
	rows := warehousetest.Rows(t, schema.User(), warehousetest.EdgeUsers)
	rows[1].Values[title] = 42
	_, err := s.Write(ctx, rows, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "copying new users: encoding user 2, column title: a Go int cannot be written as text") {
		t.Errorf("wrong Go type: %v", err)
	}
	rows = warehousetest.Rows(t, schema.User(), warehousetest.EdgeUsers)
	rows[0].Values = rows[0].Values[:3]
	if _, err = s.Write(ctx, rows, nil, nil); err == nil || !strings.Contains(err.Error(), "encoding user 1: 3 attributes") {
		t.Errorf("missing values: %v", err)
	}
	c, err := s.Write(ctx, warehousetest.Rows(t, schema.User(), warehousetest.EdgeUsers), nil, nil)
	if err != nil || c.Inserted != 3 {
		t.Errorf("load after the failures: %+v, %v", c, err)
	}
}

func TestDedupePairs(t *testing.T) {
	t.Parallel()
	got := dedupePairs([][2]int64{{1, 10}, {1, 11}, {1, 10}, {2, 10}, {1, 11}})
	if want := [][2]int64{{1, 10}, {1, 11}, {2, 10}}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

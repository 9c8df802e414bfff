package loadtest

import (
	"context"
	"testing"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dimensions"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// Users is the users Store of s.
func Users(t testing.TB, s *warehouse.Store) *users.Store {
	t.Helper()
	u, err := users.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Dimensions is the dimensions Store of s.
func Dimensions(t testing.TB, s *warehouse.Store) *dimensions.Store {
	t.Helper()
	d, err := dimensions.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// LoadDimension writes the full list of one dimension (team, role or
// profile), held whole in memory, in one transaction: a dimensions.Load of
// one page. present holds every id the API returned, quarantined ones
// included.
func LoadDimension(ctx context.Context, s *warehouse.Store, typ string, rows []normalize.Row, bad []warehouse.Quarantined, present []int64, runID int64) (warehouse.Counts, error) {
	dims, err := dimensions.New(s)
	if err != nil {
		return warehouse.Counts{}, err
	}
	d, err := dims.Begin(ctx, typ, runID)
	if err != nil {
		return warehouse.Counts{}, err
	}
	defer d.Close()
	if err := d.Page(ctx, rows, bad, present); err != nil {
		return warehouse.Counts{}, err
	}
	return d.Finish(ctx)
}

package dimensions_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

// TestDimensionDigests: a list finished with a digest stores it, in the
// same transaction as the list; a list finished without one forgets it,
// so a later sync cannot take a list it never compared for unchanged.
func TestDimensionDigests(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	dims := loadtest.Dimensions(t, s)
	ctx := context.Background()
	load := func(digest []byte) {
		t.Helper()
		d, err := dims.Begin(ctx, "team", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Page(ctx, teamRows(t, teamJSON(1, "a", "2024-01-01T00:00:00Z")), nil, []int64{1}); err != nil {
			t.Fatal(err)
		}
		d.SetDigest(digest)
		if _, err := d.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	}
	digests := func() map[string][]byte {
		t.Helper()
		m, err := dims.Digests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := digests(); len(m) != 0 {
		t.Fatalf("digests before any list: %v", m)
	}
	load([]byte("first"))
	if m := digests(); len(m) != 1 || !bytes.Equal(m["teams"], []byte("first")) {
		t.Errorf("digests after a list with one: %q", m)
	}
	load(nil)
	if m := digests(); len(m) != 0 {
		t.Errorf("digests after a list without one: %q", m)
	}
	// A list that fails before Finish leaves the stored digest alone.
	load([]byte("second"))
	d, err := dims.Begin(ctx, "team", 0)
	if err != nil {
		t.Fatal(err)
	}
	d.SetDigest([]byte("third"))
	d.Close()
	if m := digests(); !bytes.Equal(m["teams"], []byte("second")) {
		t.Errorf("digests after a list closed unfinished: %q", m)
	}
}

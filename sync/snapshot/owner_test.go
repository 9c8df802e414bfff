package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestOwnersShareAFolder: in a folder two fleets wrote to before folders
// were marked (same schema name, databases of their own), a writer's
// retention and DropFolder remove only the snapshots whose manifest names
// it, leaving the other fleet's, an earlier release's and failed
// snapshots' files; once the folder is marked as the other's, the writer
// neither writes nor drops there, and the owner's DropFolder empties it.
func TestOwnersShareAFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 10)
	local, dir := newLocal(t)
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	a := Owner{Fleet: "a_river", Database: "usersync@1", Account: "beta"}
	b := Owner{Fleet: "b_river", Database: "usersync@2", Account: "beta"}
	write := func(o Owner, keep int) Manifest {
		t.Helper()
		w, err := New(pool, name, local, testLogger(t), clock.now, Options{Owner: o, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.next()
		return m
	}
	marker := filepath.Join(dir, name, markerName)
	bSnap := write(b, 30) // marks the empty folder as b's
	if got, ok, err := FolderOwner(ctx, local, name); err != nil || !ok || got != b {
		t.Fatalf("the first write did not mark the folder as b's: %v %v %v", got, ok, err)
	}
	if err := os.Remove(marker); err != nil { // as before folders were marked
		t.Fatal(err)
	}
	legacy := write(Owner{}, 30)
	failed := name + "/users/20261122T100000Z/part-00000.parquet"
	writeFile(t, dir, failed)
	var aSnaps []Manifest
	for range 3 {
		aSnaps = append(aSnaps, write(a, 1))
	}
	want := slices.Concat(manifestFiles(bSnap), manifestFiles(legacy), []string{failed}, manifestFiles(aSnaps[2]))
	slices.Sort(want)
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("after a's retention:\n got %q\nwant %q", got, want)
	}

	removed, left, err := DropFolder(ctx, local, name, a, testLogger(t))
	links := len(aSnaps[2].Tables) // the stable links point at a's snapshot: removed with it
	if err != nil || removed != len(manifestFiles(aSnaps[2]))+links || left != len(want)-removed+links {
		t.Errorf("DropFolder(a) = %d removed, %d left, %v", removed, left, err)
	}
	want = slices.DeleteFunc(want, func(f string) bool { return slices.Contains(manifestFiles(aSnaps[2]), f) })
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("after DropFolder(a):\n got %q\nwant %q", got, want)
	}

	if err := MarkFolder(ctx, local, name, b); err != nil {
		t.Fatal(err)
	}
	w, err := New(pool, name, local, testLogger(t), clock.now, Options{Owner: a, Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	var fe *ForeignFolderError
	if _, err := w.Write(ctx); !errors.As(err, &fe) || fe.Owner != b {
		t.Errorf("a's Write into b's folder: %v; want a ForeignFolderError naming b", err)
	}
	if _, _, err := DropFolder(ctx, local, name, a, nil); !errors.As(err, &fe) {
		t.Errorf("DropFolder(a) of b's folder: %v; want a ForeignFolderError", err)
	}
	if got := files(t, dir); len(got) != len(want)+1 {
		t.Errorf("a changed b's folder: %q", got)
	}
	if _, left, err := DropFolder(ctx, local, name, b, nil); err != nil || left != 0 {
		t.Errorf("DropFolder(b) of its folder: %d left, %v", left, err)
	}
	if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b's folder is still there: %v", err)
	}
}

package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestRetentionKeepsNewest(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 20)
	for _, keep := range []int{1, 3} {
		t.Run("keep "+strconv.Itoa(keep), func(t *testing.T) {
			t.Parallel()
			local, dir := newLocal(t)
			dest := &hookDestination{Destination: local}
			// Files that are not snapshots are never touched.
			others := []string{"README.txt", "notes/users.txt", "users/not-a-snapshot/x.parquet", name + "/users/not-a-snapshot/x.parquet"}
			for _, f := range others {
				writeFile(t, dir, f)
			}
			clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
			w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Keep: keep})
			if err != nil {
				t.Fatal(err)
			}
			var all []Manifest
			for i := range 5 {
				m, err := w.Write(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, m)
				clock.next()
				kept := all[max(0, len(all)-keep):]
				ids, err := Manifests(context.Background(), dest, name)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, k := range kept {
					want = append(want, k.ID)
				}
				if !slices.Equal(ids, want) {
					t.Errorf("after snapshot %d: manifests %q, want %q", i, ids, want)
				}
				assertOnlyAnd(t, dest, dir, others, kept...)
			}
		})
	}
}

// assertOnlyAnd is assertOnly with extra files that must survive.
func assertOnlyAnd(t *testing.T, dest *hookDestination, dir string, extra []string, snaps ...Manifest) {
	t.Helper()
	want := slices.Clone(extra)
	for _, m := range snaps {
		want = append(want, manifestFiles(m)...)
	}
	slices.Sort(want)
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("files:\n got %q\nwant %q", got, want)
	}
	assertLatest(t, dest, snaps[len(snaps)-1])
}

func writeFile(t testing.TB, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLeftoversAreRemoved(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 10)
	local, dir := newLocal(t)
	dest := &hookDestination{Destination: local}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// What crashed snapshots leave: folders without a manifest (older and
	// newer than the latest), temporary files, a temporary manifest, and a
	// temporary file inside the complete snapshot's folder.
	for _, f := range []string{
		"users/20261122T101000Z/part-00000.parquet",
		"teams/20261122T101000Z/.part-00000.parquet.tmp-0a1b2c",
		"users/20261122T101530Z/part-00000.parquet",
		"users/20261122T101530Z/.part-00001.parquet.tmp-0a1b2c",
		"_manifests/.20261122T101530Z.json.tmp-3d4e5f",
		"roles/" + first.ID + "/.part-00001.parquet.tmp-778899",
	} {
		writeFile(t, dir, name+"/"+f)
	}
	assertLatest(t, dest, first)
	clock.next()
	second, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dest, dir, first, second)
	for _, d := range []string{"users/20261122T101000Z", "users/20261122T101530Z", "teams/20261122T101000Z"} {
		if _, err := os.Stat(filepath.Join(dir, name, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("folder %s was not removed: %v", d, err)
		}
	}
}

func TestSnapshotIDs(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	local, _ := newLocal(t)
	at := time.Date(2026, 11, 22, 10, 15, 0, 500, time.UTC)
	now := at
	w, err := New(pool, name, local, testLogger(t), func() time.Time { return now }, Options{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for range 3 { // the same second three times
		m, err := w.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	if want := []string{"20261122T101500Z", "20261122T101500Z-01", "20261122T101500Z-02"}; !slices.Equal(ids, want) {
		t.Errorf("ids in one second: %q, want %q", ids, want)
	}
	if latest, err := Latest(ctx, local, name); err != nil || latest.ID != ids[2] {
		t.Errorf("Latest = %v, %v; want %s", latest.ID, err, ids[2])
	}
	// A clock a minute behind (another replica's) still sorts its snapshot
	// after the newest.
	now = at.Add(-time.Minute)
	m, err := w.Write(ctx)
	if err != nil || m.ID != "20261122T101500Z-03" {
		t.Errorf("Write with the clock a minute behind: %s, %v; want 20261122T101500Z-03", m.ID, err)
	}
	if latest, err := Latest(ctx, local, name); err != nil || latest.ID != m.ID {
		t.Errorf("Latest = %v, %v; want %s", latest.ID, err, m.ID)
	}
}

func TestLatestWithoutSnapshot(t *testing.T) {
	t.Parallel()
	local, dir := newLocal(t)
	writeFile(t, dir, "usersync/users/20261122T101000Z/part-00000.parquet") // no manifest: incomplete
	if _, err := Latest(context.Background(), local, "usersync"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Latest = %v, want ErrNoSnapshot", err)
	}
}

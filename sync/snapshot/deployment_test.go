package snapshot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeSnapshots writes n snapshots of a new warehouse (a deployment) to
// dir, a minute apart from start, and returns their manifests.
func writeSnapshots(t *testing.T, dir string, start time.Time, n int, opts Options) []Manifest {
	t.Helper()
	pool, schemaName := newWarehouse(t)
	fill(t, pool, schemaName, 10)
	dest, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: start}
	w, err := New(pool, schemaName, dest, testLogger(t), clock.now, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []Manifest
	for range n {
		m, err := w.Write(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		clock.next()
	}
	return out
}

// assertFilesExist checks that every file of the snapshots, their
// manifests aside, is still in dir.
func assertFilesExist(t *testing.T, dir string, snaps []Manifest) {
	t.Helper()
	for _, m := range snaps {
		for _, tm := range m.Tables {
			for _, f := range tm.Files {
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path))); err != nil {
					t.Errorf("snapshot %s of schema %s: %v", m.ID, m.Schema, err)
				}
			}
		}
	}
}

// TestRetentionKeepsOtherDeployments: two deployments (warehouse schemas)
// sharing a snapshot folder; the one with the tighter retention, writing
// later, removed every snapshot of the other.
func TestRetentionKeepsOtherDeployments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := writeSnapshots(t, dir, at, 3, Options{})
	b := writeSnapshots(t, dir, at.Add(time.Hour), 2, Options{Keep: 1})
	assertFilesExist(t, dir, a)
	assertFilesExist(t, dir, b[1:])
	for _, m := range slices.Concat(a, b) {
		for _, tm := range m.Tables {
			for _, f := range tm.Files {
				if !strings.HasPrefix(f.Path, m.Schema+"/"+tm.Name+"/"+m.ID+"/") {
					t.Errorf("file %s of schema %s is outside the schema's folder", f.Path, m.Schema)
				}
			}
		}
	}
}

// TestLatestOfOwnDeployment: the newest snapshot, the list of snapshots and
// a manifest are those of the deployment asked for, even when another's
// are newer; a manifest of another deployment's in its folder is refused.
func TestLatestOfOwnDeployment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := writeSnapshots(t, dir, at, 2, Options{})
	b := writeSnapshots(t, dir, at.Add(time.Hour), 1, Options{})
	root, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if m, err := Latest(ctx, root, a[0].Schema); err != nil || m.ID != a[1].ID || m.Schema != a[0].Schema {
		t.Errorf("Latest of %s = %s of %s, %v; want %s", a[0].Schema, m.ID, m.Schema, err, a[1].ID)
	}
	if ids, err := Manifests(ctx, root, a[0].Schema); err != nil || !slices.Equal(ids, []string{a[0].ID, a[1].ID}) {
		t.Errorf("Manifests of %s = %q, %v", a[0].Schema, ids, err)
	}
	if _, err := Latest(ctx, root, "nobody"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Latest of a deployment without snapshots = %v, want ErrNoSnapshot", err)
	}
	if _, err := Latest(ctx, root, "../"+b[0].Schema); err == nil {
		t.Error("Latest of an invalid schema name succeeded")
	}
	// B's manifest copied into A's folder is not taken for one of A's.
	data, err := os.ReadFile(filepath.Join(dir, b[0].Schema, manifestName(b[0].ID)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, a[0].Schema, manifestName(b[0].ID)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Latest(ctx, root, a[0].Schema); err == nil || !strings.Contains(err.Error(), "written by the deployment of schema") {
		t.Errorf("Latest with another deployment's manifest = %v, want an error naming the schema", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOldLayoutLeftAlone: snapshots of the layout without deployment
// folders (<root>/_manifests, <root>/<table>) are neither removed nor taken
// for the deployment's, and each Write warns that they are there.
func TestOldLayoutLeftAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pool, name := newWarehouse(t)
	old := []string{"_manifests/20261101T000000Z.json", "users/20261101T000000Z/part-00000.parquet",
		"teams/20261101T000000Z/part-00000.parquet"}
	for _, f := range old {
		writeFile(t, dir, f)
	}
	manifest := `{"format": 1, "id": "20261101T000000Z", "schema": "` + name + `", "tables": [{"name": "users", "files": [` +
		`{"path": "users/20261101T000000Z/part-00000.parquet"}]}, {"name": "teams", "files": [{"path": "teams/20261101T000000Z/part-00000.parquet"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "_manifests", "20261101T000000Z.json"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	dest, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, log, clock.now, Options{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	var last Manifest
	for range 2 {
		if last, err = w.Write(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.next()
	}
	for _, f := range old {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("a snapshot of the earlier layout was touched: %v", err)
		}
	}
	assertFilesExist(t, dir, []Manifest{last})
	if n := strings.Count(logs.String(), "snapshots without a deployment folder are left untouched"); n != 2 ||
		!strings.Contains(logs.String(), "snapshots=1 oldest=20261101T000000Z") {
		t.Errorf("want a warning about the earlier layout at each of 2 Writes, got %d:\n%s", n, logs.String())
	}
	if m, err := Latest(context.Background(), dest, name); err != nil || m.ID != last.ID {
		t.Errorf("Latest = %s, %v; want %s", m.ID, err, last.ID)
	}
}

// TestSymlinkedTableFolderRefused: a table folder that is a symbolic link
// was skipped by retention in silence, so the snapshots behind it outlived
// their retention. Write now refuses, naming the link,
// and neither follows it (nothing behind it is removed) nor removes it.
func TestSymlinkedTableFolderRefused(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 10)
	dir, outside := t.TempDir(), t.TempDir()
	dest, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	first, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	users, _ := first.Table("users")
	folder := filepath.Dir(filepath.Dir(filepath.Join(dir, filepath.FromSlash(users.Files[0].Path)))) // <root>/…/users
	moved := filepath.Join(outside, "users")
	if err := os.Rename(folder, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, folder); err != nil {
		t.Fatal(err)
	}
	clock.next()
	_, err = w.Write(context.Background())
	if err == nil || !strings.Contains(err.Error(), folder+" is a symbolic link") {
		t.Fatalf("Write with a symlinked table folder = %v, want a refusal naming %s", err, folder)
	}
	if fi, err := os.Lstat(folder); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was removed or replaced: %v", err)
	}
	behind, err := filepath.Glob(filepath.Join(moved, "*Z", "*.parquet")) // not through the stable link
	if err != nil || len(behind) != len(users.Files) {
		t.Errorf("files behind the link: %q, %v; want the %d of the first snapshot", behind, err, len(users.Files))
	}
	assertFilesExist(t, dir, []Manifest{first})
}

// TestLocalListRefusesLinks: a local folder's List fails with a LinkError on
// a link under the listed folder, or on the listed folder being one.
func TestLocalListRefusesLinks(t *testing.T) {
	t.Parallel()
	dest, dir := newLocal(t)
	writeFile(t, dir, "s/users/20261122T101500Z/part-00000.parquet")
	writeFile(t, dir, "other/x")
	if err := os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "s", "teams")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "s"), filepath.Join(dir, "t")); err != nil {
		t.Fatal(err)
	}
	for prefix, link := range map[string]string{"s/": "s/teams", "t/": "t", "": "s/teams"} {
		_, err := dest.List(context.Background(), prefix)
		var le *LinkError
		if !errors.As(err, &le) || le.Path != filepath.Join(dest.String(), filepath.FromSlash(link)) {
			t.Errorf("List(%q) = %v, want a LinkError on %s", prefix, err, link)
		}
	}
	if entries, err := dest.List(context.Background(), "s/users/"); err != nil || len(entries) != 1 {
		t.Errorf("List of a folder without links = %v, %v", entries, err)
	}
}

package snapshot

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRetentionThroughSymlinkedFolder: a snapshot folder that is a symlink
// to the real one keeps USERSYNC_SNAPSHOT_KEEP snapshots like a plain one.
func TestRetentionThroughSymlinkedFolder(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 5)
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "snapshots")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dest, err := ParseDestination(link, S3Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	var last Manifest
	for range 4 {
		if last, err = w.Write(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.next()
	}
	ids, err := Manifests(context.Background(), dest, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[1] != last.ID {
		t.Errorf("manifests kept with keep=2 after 4 snapshots: %q", ids)
	}
	users, _ := last.Table("users")
	if dirs, err := os.ReadDir(filepath.Join(real, name, "users")); err != nil || len(dirs) != 3 || len(users.Files) == 0 { // and current
		t.Errorf("users folders left: %d (%v)", len(dirs), err)
	}
}

// TestLocalModes: snapshot files and folders are not readable by others nor
// writable by the group, whatever the umask.
func TestLocalModes(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 5)
	dir := filepath.Join(t.TempDir(), "new", "snapshots")
	dest, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(pool, name, dest, testLogger(t), time.Now, Options{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(filepath.Dir(dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // a stable link: Linux ignores a link's own mode
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o027 != 0 {
			t.Errorf("%s: mode %s gives others access or the group write access", p, info.Mode())
		}
		n++
		return nil
	})
	if err != nil || n < 10 {
		t.Errorf("walked %d entries: %v", n, err)
	}
}

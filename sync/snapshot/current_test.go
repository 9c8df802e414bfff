package snapshot

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// failingCurrent fails SetCurrent for the table named in fail, if any.
type failingCurrent struct {
	Destination
	fail atomic.Value // string
}

func (d *failingCurrent) SetCurrent(ctx context.Context, link, target string, files []string) error {
	if f, _ := d.fail.Load().(string); f != "" && path.Base(path.Dir(link)) == f {
		return errors.New("switch refused by the test")
	}
	return d.Destination.SetCurrent(ctx, link, target, files)
}

// assertLinks checks that every table of m has its stable link pointing at
// m, and that the files read through it are m's.
func assertLinks(t *testing.T, dir string, m Manifest) {
	t.Helper()
	for _, tm := range m.Tables {
		link := filepath.Join(dir, m.Schema, tm.Name, currentName)
		if got, err := os.Readlink(link); err != nil || got != m.ID {
			t.Errorf("%s points to %q (%v), want %s", link, got, err, m.ID)
			continue
		}
		var want []string
		for _, f := range tm.Files {
			want = append(want, path.Base(f.Path))
		}
		got, err := filepath.Glob(filepath.Join(link, "*.parquet"))
		for i := range got {
			got[i] = filepath.Base(got[i])
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s shows %q (%v), want %q", link, got, err, want)
		}
	}
}

// TestStablePathsLocal: each table's <table>/current links to the newest
// complete snapshot after every Write, retention (keep 1) never removes
// what a link points to, a switch that fails pins the previous snapshot
// until a later Write (even one that finds nothing changed) repairs it,
// and a temporary link left by a crash is removed.
func TestStablePathsLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 20)
	local, dir := newLocal(t)
	dest := &failingCurrent{Destination: local}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertLinks(t, dir, a)
	leftover := filepath.Join(dir, name, "teams", "."+currentName+tempMarker+"0a1b2c")
	if err := os.Symlink(a.ID, leftover); err != nil {
		t.Fatal(err)
	}

	dest.fail.Store("users")
	clock.next()
	b, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(filepath.Join(dir, name, "users", currentName)); got != a.ID {
		t.Errorf("users/current points to %q after a failed switch, want the previous %s", got, a.ID)
	}
	assertFilesExist(t, dir, []Manifest{a, b}) // a is pinned by users/current
	if _, err := os.Lstat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary link a crash left is still there: %v", err)
	}

	dest.fail.Store("")
	clock.next()
	if m, err := w.WriteChanged(ctx); !errors.Is(err, ErrUnchanged) || m.ID != b.ID {
		t.Fatalf("WriteChanged = %s, %v; want %s unchanged", m.ID, err, b.ID)
	}
	assertLinks(t, dir, b)
	if _, err := pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{name, "user_teams"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	clock.next()
	c, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertLinks(t, dir, c)
	assertOnly(t, &hookDestination{Destination: local}, dir, c)
}

// TestStablePathsS3: on S3 each table's current/ holds copies of the
// newest complete snapshot's files, byte for byte, and no file of an
// earlier one, after retention (keep 1) and after a table shrinks to fewer
// files.
func TestStablePathsS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 30)
	fake := newFakeS3(t, "snapshots")
	dest, err := ParseDestination("s3://snapshots/prod", S3Options{Endpoint: fake.URL, Region: "us-east-1",
		AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Keep: 1, FileRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertCopies(t, dest, a)
	if _, err := pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{name, "user_teams"}.Sanitize()+` WHERE user_id > 3`); err != nil {
		t.Fatal(err)
	}
	clock.next()
	b, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := a.Table("user_teams")
	after, _ := b.Table("user_teams")
	if len(after.Files) >= len(before.Files) {
		t.Fatalf("user_teams has %d files, before %d: the test wants fewer", len(after.Files), len(before.Files))
	}
	assertCopies(t, dest, b)
	if ids, err := Manifests(ctx, dest, name); err != nil || !slices.Equal(ids, []string{b.ID}) {
		t.Errorf("manifests %q, %v; want only %s", ids, err, b.ID)
	}
}

// assertCopies checks that each table's current/ in dest holds exactly the
// files of m, with the same bytes.
func assertCopies(t *testing.T, dest Destination, m Manifest) {
	t.Helper()
	ctx := context.Background()
	for _, tm := range m.Tables {
		prefix := m.Schema + "/" + tm.Name + "/" + currentName + "/"
		entries, err := dest.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, e := range entries {
			got = append(got, e.Name)
		}
		for _, f := range tm.Files {
			want = append(want, prefix+path.Base(f.Path))
			if a, b := readAll(t, dest, f.Path), readAll(t, dest, prefix+path.Base(f.Path)); !bytes.Equal(a, b) {
				t.Errorf("%s differs from %s", prefix+path.Base(f.Path), f.Path)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %q, want %q", prefix, got, want)
		}
	}
}

func readAll(t *testing.T, dest Destination, name string) []byte {
	t.Helper()
	r, err := dest.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStablePathsOtherDeployment: another deployment's snapshots in the
// same folder, newer and with retention (keep 1), leave a deployment's
// stable links and the snapshot they point to alone.
func TestStablePathsOtherDeployment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := writeSnapshots(t, dir, at, 1, Options{Keep: 1})
	b := writeSnapshots(t, dir, at.Add(time.Hour), 3, Options{Keep: 1})
	assertLinks(t, dir, a[0])
	assertLinks(t, dir, b[2])
	assertFilesExist(t, dir, []Manifest{a[0], b[2]})
}

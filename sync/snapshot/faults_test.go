package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/internal/alonetest"
)

// hookDestination wraps a Destination: it records the order in which
// objects are committed, and wrap (when set) may replace each new object,
// e.g. with one that fails.
type hookDestination struct {
	Destination
	mu      sync.Mutex
	commits []string
	wrap    func(ctx context.Context, name string, o Object) Object
}

func (d *hookDestination) Create(ctx context.Context, name string) (Object, error) {
	o, err := d.Destination.Create(ctx, name)
	if err != nil {
		return nil, err
	}
	var obj Object = &recordingObject{Object: o, d: d, name: name}
	d.mu.Lock()
	wrap := d.wrap
	d.mu.Unlock()
	if wrap != nil {
		obj = wrap(ctx, name, obj)
	}
	return obj, nil
}

func (d *hookDestination) setWrap(wrap func(ctx context.Context, name string, o Object) Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.wrap = wrap
}

func (d *hookDestination) committed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.commits)
}

type recordingObject struct {
	Object
	d    *hookDestination
	name string
}

func (o *recordingObject) Commit(ctx context.Context) error {
	if err := o.Object.Commit(ctx); err != nil {
		return err
	}
	o.d.mu.Lock()
	defer o.d.mu.Unlock()
	o.d.commits = append(o.d.commits, o.name)
	return nil
}

// failingObject accepts left bytes, then fails every write with err, as a
// full disk does.
type failingObject struct {
	Object
	left int
	err  error
}

func (o *failingObject) Write(p []byte) (int, error) {
	if len(p) > o.left {
		n, _ := o.Object.Write(p[:o.left])
		o.left = 0
		return n, o.err
	}
	o.left -= len(p)
	return o.Object.Write(p)
}

// failOn makes the objects whose name starts with prefix fail after n bytes.
func failOn(prefix string, n int, err error) func(context.Context, string, Object) Object {
	return func(_ context.Context, name string, o Object) Object {
		if _, rel, _ := strings.Cut(name, "/"); strings.HasPrefix(rel, prefix) { // rel: within the deployment's folder
			return &failingObject{Object: o, left: n, err: err}
		}
		return o
	}
}

// files lists every file under dir, relative and slash-separated.
func files(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 { // stable links: see current_test.go
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// manifestFiles lists the files of snapshot m and its manifest, sorted.
func manifestFiles(m Manifest) []string {
	out := []string{m.Schema + "/" + manifestName(m.ID)}
	for _, tm := range m.Tables {
		for _, f := range tm.Files {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return out
}

// assertOnly checks that dir holds exactly the files of the given
// snapshots, that Latest is the last of them, and that every file Latest
// lists reads back.
func assertOnly(t *testing.T, dest *hookDestination, dir string, snaps ...Manifest) {
	t.Helper()
	var want []string
	for _, m := range snaps {
		want = append(want, manifestFiles(m)...)
	}
	slices.Sort(want)
	if got := files(t, dir); !slices.Equal(got, want) {
		t.Errorf("files:\n got %q\nwant %q", got, want)
	}
	assertLatest(t, dest, snaps[len(snaps)-1])
}

// assertLatest checks that Latest is want and that every file it lists
// reads back with the rows it claims.
func assertLatest(t *testing.T, dest Destination, want Manifest) {
	t.Helper()
	latest, err := Latest(context.Background(), dest, want.Schema)
	if err != nil {
		t.Fatalf("Latest: %v", err)
	}
	if latest.ID != want.ID {
		t.Errorf("Latest is %s, want %s", latest.ID, want.ID)
	}
	for _, tm := range latest.Tables {
		snapshotRows(t, dest, tm)
	}
}

func TestWriteFailureKeepsPreviousSnapshot(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 60)
	for _, tc := range []struct {
		name   string
		wrap   func(ctx context.Context, name string, o Object) Object
		cancel bool   // cancel the Write's context instead of failing a write
		want   error  // errors.Is the returned error
		in     string // the error's text contains
	}{
		{name: "disk full in a table file", wrap: failOn("users_current/", 1000, syscall.ENOSPC),
			want: syscall.ENOSPC, in: "table users_current: "},
		{name: "disk full at the first byte", wrap: failOn("users/", 0, syscall.ENOSPC),
			want: syscall.ENOSPC, in: "table users: "},
		{name: "disk full in the manifest", wrap: failOn("_manifests/", 10, syscall.ENOSPC),
			want: syscall.ENOSPC, in: "writing manifest"},
		{name: "context cancelled mid-snapshot", cancel: true, want: context.Canceled, in: "table user_versions: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			local, dir := newLocal(t)
			dest := &hookDestination{Destination: local}
			clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
			w, err := New(pool, name, dest, testLogger(t), clock.now, Options{FileRows: 25})
			if err != nil {
				t.Fatal(err)
			}
			first, err := w.Write(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			clock.next()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				dest.setWrap(func(_ context.Context, name string, o Object) Object {
					if _, rel, _ := strings.Cut(name, "/"); strings.HasPrefix(rel, "user_versions/") {
						cancel()
					}
					return o
				})
			} else {
				dest.setWrap(tc.wrap)
			}
			alonetest.Run(t, ctx, func(ctx context.Context) { _, err = w.Write(ctx) })
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.in) {
				t.Fatalf("Write = %v, want %v containing %q", err, tc.want, tc.in)
			}
			t.Logf("error: %v", err)
			assertOnly(t, dest, dir, first)

			dest.setWrap(nil)
			clock.next()
			third, err := w.Write(context.Background())
			if err != nil {
				t.Fatalf("Write after the failure: %v", err)
			}
			assertOnly(t, dest, dir, first, third)
		})
	}
}

func TestManifestIsCommittedLast(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 30)
	local, _ := newLocal(t)
	dest := &hookDestination{Destination: local}
	w, err := New(pool, name, dest, testLogger(t), nil, Options{FileRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	m, err := w.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := dest.committed()
	if want := manifestFiles(m); len(got) != len(want) || got[len(got)-1] != name+"/"+manifestName(m.ID) {
		t.Errorf("commit order %q: want the %d files, the manifest last", got, len(want))
	}
}

package snapshot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
)

// fakeS3 is an in-memory S3 implementation (gofakes3) served over HTTP,
// which counts the parts uploaded to each key.
type fakeS3 struct {
	URL   string
	mu    sync.Mutex
	parts map[string]int // key → parts uploaded
}

// newFakeS3 starts a fake S3 server with an empty bucket.
func newFakeS3(t testing.TB, bucket string) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	f := &fakeS3{parts: map[string]int{}}
	s3 := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") && r.URL.Query().Has("uploadId") {
			f.mu.Lock()
			f.parts[strings.TrimPrefix(r.URL.Path, "/")]++
			f.mu.Unlock()
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// partsOf returns how many parts were uploaded to path (/bucket/key).
func (f *fakeS3) partsOf(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[path]
}

func TestS3RoundTrip(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 60)
	// 100 kB of incompressible text per user, so the users file spans two
	// 5 MiB parts of a multipart upload.
	if _, err := pool.Exec(context.Background(), `UPDATE `+pgx.Identifier{name, "users"}.Sanitize()+` u SET custom1 =
		(SELECT string_agg(md5(random()::text || g), '') FROM generate_series(1, 3200) g WHERE u.id IS NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	fake := newFakeS3(t, "snapshots")
	d, err := ParseDestination("s3://snapshots/warehouse/prod", S3Options{Endpoint: fake.URL, Region: "us-east-1",
		AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", PathStyle: true, PartSize: MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	s3 := d.(*S3)
	if s3.String() != "s3://snapshots/warehouse/prod" {
		t.Errorf("String() = %s", s3)
	}
	dest := &hookDestination{Destination: s3}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{Compression: CompressionNone, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var all []Manifest
	for range 3 {
		m, err := w.Write(ctx)
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		all = append(all, m)
		clock.next()
	}

	// Retention, and the manifest committed after every file.
	if ids, err := Manifests(ctx, dest, name); err != nil || !slices.Equal(ids, []string{all[1].ID, all[2].ID}) {
		t.Errorf("manifests %q, %v; want the two newest", ids, err)
	}
	commits := dest.committed()
	mi := slices.Index(commits, name+"/"+manifestName(all[2].ID))
	for _, f := range manifestFiles(all[2]) {
		if i := slices.Index(commits, f); i < 0 || i > mi {
			t.Errorf("%s committed at %d, the manifest at %d", f, i, mi)
		}
	}

	// Every value reads back from the objects.
	latest, err := Latest(ctx, dest, name)
	if err != nil || latest.ID != all[2].ID {
		t.Fatalf("Latest = %s, %v", latest.ID, err)
	}
	for _, tm := range latest.Tables {
		got, _ := snapshotRows(t, dest, tm)
		sameRows(t, tm.Name, pgRows(t, pool, name, tableByName(t, tm.Name)), got)
	}

	// The users file was a multipart upload of two parts, the objects are
	// under the prefix, and only the kept snapshots remain.
	users, _ := latest.Table("users")
	if n := fake.partsOf("snapshots/warehouse/prod/" + users.Files[0].Path); n != 2 {
		t.Errorf("users file (%d bytes) uploaded in %d parts, want 2", users.Files[0].Bytes, n)
	}
	var keys []string
	for o := range s3.client.ListObjects(ctx, "snapshots", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	var want []string
	for _, m := range all[1:] {
		for _, f := range manifestFiles(m) {
			want = append(want, "warehouse/prod/"+f)
		}
	}
	for _, tm := range all[2].Tables { // the stable paths' copies of the newest
		for _, f := range tm.Files {
			want = append(want, "warehouse/prod/"+name+"/"+tm.Name+"/current/"+path.Base(f.Path))
		}
	}
	slices.Sort(want)
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("objects:\n got %q\nwant %q", keys, want)
	}

	// A failed upload, one part already sent, is aborted: no object and no
	// unfinished upload remain.
	dest.setWrap(failOn("users_current/", MinPartSize+100, syscall.ENOSPC))
	if _, err := w.Write(ctx); err == nil {
		t.Fatal("Write with a failing upload succeeded")
	}
	if n := fake.partsOf("snapshots/warehouse/prod/" + name + "/" + partName("users_current", clock.t.Format(idLayout), 0)); n != 1 {
		t.Errorf("the failed upload sent %d parts before it was aborted, want 1", n)
	}
	entries, err := dest.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Partial {
			t.Errorf("unfinished upload left: %s", e.Name)
		}
		names = append(names, "warehouse/prod/"+e.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("objects after a failed snapshot:\n got %q\nwant %q", names, want)
	}
	assertLatest(t, dest, all[2])
}

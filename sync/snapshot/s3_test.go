package snapshot

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
)

// newFakeS3 serves an in-memory S3 implementation (gofakes3) over HTTP with
// an empty bucket and returns its endpoint.
func newFakeS3(t testing.TB, bucket string) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL
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
	endpoint := newFakeS3(t, "snapshots")
	d, err := ParseDestination("s3://snapshots/warehouse/prod", S3Options{Endpoint: endpoint, Region: "us-east-1",
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
	if ids, err := Manifests(ctx, dest); err != nil || !slices.Equal(ids, []string{all[1].ID, all[2].ID}) {
		t.Errorf("manifests %q, %v; want the two newest", ids, err)
	}
	commits := dest.committed()
	mi := slices.Index(commits, manifestName(all[2].ID))
	for _, f := range manifestFiles(all[2]) {
		if i := slices.Index(commits, f); i < 0 || i > mi {
			t.Errorf("%s committed at %d, the manifest at %d", f, i, mi)
		}
	}

	// Every value reads back from the objects.
	latest, err := Latest(ctx, dest)
	if err != nil || latest.ID != all[2].ID {
		t.Fatalf("Latest = %s, %v", latest.ID, err)
	}
	for _, tm := range latest.Tables {
		got, _ := snapshotRows(t, dest, tm)
		sameRows(t, tm.Name, pgRows(t, pool, name, tableByName(t, tm.Name)), got)
	}

	// The objects are under the prefix, the users file was a multipart
	// upload (its ETag has a part count), and only kept snapshots remain.
	users, _ := latest.Table("users")
	var keys []string
	for o := range s3.client.ListObjects(ctx, "snapshots", minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
		if o.Key == "warehouse/prod/"+users.Files[0].Path && !strings.HasSuffix(o.ETag, "-2") {
			t.Errorf("users file (%d bytes) has ETag %s, want a 2-part multipart upload", o.Size, o.ETag)
		}
	}
	var want []string
	for _, m := range all[1:] {
		for _, f := range manifestFiles(m) {
			want = append(want, "warehouse/prod/"+f)
		}
	}
	slices.Sort(want)
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("objects:\n got %q\nwant %q", keys, want)
	}

	// A failed upload is aborted: no object and no unfinished upload remain.
	dest.setWrap(failOn("users_current/", 6<<20, syscall.ENOSPC))
	if _, err := w.Write(ctx); err == nil {
		t.Fatal("Write with a failing upload succeeded")
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

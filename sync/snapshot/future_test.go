package snapshot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFutureDatedSnapshotIsSetAside: a complete snapshot dated a day after
// the clock (written while the clock was ahead, then set back) and a copied
// one dated 2099 no longer stop every later snapshot (before,
// each Write failed until someone removed them by hand): they are set
// aside with a warning, not taken for the newest, and retention neither
// counts them against the newest nor removes them; on a local folder and on
// S3.
func TestFutureDatedSnapshotIsSetAside(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 20)
	for _, kind := range []string{"local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var dest Destination
			if kind == "local" {
				dest, _ = newLocal(t)
			} else {
				fake := newFakeS3(t, "snapshots")
				d, err := ParseDestination("s3://snapshots/prod", S3Options{Endpoint: fake.URL, Region: "us-east-1",
					AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", PathStyle: true})
				if err != nil {
					t.Fatal(err)
				}
				dest = d
			}
			logs := &syncBuffer{}
			// Latest goes by the real clock: the ids are around it.
			clock := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
			w, err := New(pool, name, dest, slog.New(slog.NewTextHandler(logs, nil)), func() time.Time { return clock },
				Options{Keep: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			write := func(what string) Manifest {
				t.Helper()
				m, err := w.Write(ctx)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				return m
			}
			first := write("first snapshot")
			clock = clock.Add(24 * time.Hour) // the clock a day ahead…
			ahead := write("snapshot with the clock ahead")
			clock = clock.Add(-24*time.Hour + time.Minute) // …and set back
			copied := first
			copied.ID = "20990101T000000Z"
			if err := writeManifest(ctx, w.dest, copied); err != nil {
				t.Fatal(err)
			}
			var written []Manifest
			for i := range 3 {
				written = append(written, write("snapshot "+string(rune('1'+i))+" after the clock was set back"))
				clock = clock.Add(time.Minute)
			}
			newest := written[len(written)-1]
			if !strings.HasPrefix(newest.ID, clock.Add(-time.Minute).Format(idLayout)) {
				t.Errorf("newest snapshot %s is not named after the clock (%s)", newest.ID, clock.Add(-time.Minute).Format(idLayout))
			}
			if latest, err := Latest(ctx, dest, name); err != nil || latest.ID != newest.ID {
				t.Errorf("Latest = %s, %v; want %s", latest.ID, err, newest.ID)
			}
			ids, err := Manifests(ctx, dest, name)
			if want := []string{newest.ID, ahead.ID, copied.ID}; err != nil || !slices.Equal(ids, want) {
				t.Errorf("manifests after retention (keep 1) %q, %v; want %q", ids, err, want)
			}
			for _, f := range manifestFiles(ahead) {
				if r, err := dest.Open(ctx, f); err != nil {
					t.Errorf("file of the set-aside snapshot: %v", err)
				} else {
					r.Close()
				}
			}
			if m, err := w.WriteChanged(ctx); !errors.Is(err, ErrUnchanged) || m.ID != newest.ID {
				t.Errorf("WriteChanged with nothing changed: %s, %v; want %s unchanged", m.ID, err, newest.ID)
			}
			if !strings.Contains(logs.String(), "snapshots dated after the clock are set aside") ||
				!strings.Contains(logs.String(), ahead.ID) || !strings.Contains(logs.String(), copied.ID) {
				t.Errorf("no warning naming %s and %s:\n%s", ahead.ID, copied.ID, logs.String())
			}
		})
	}
}

package warehouse_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/loadtest"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
)

func TestCleanText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 3*warehouse.MaxErrorText) // two bytes a rune: the cut must not split one
	tests := []struct {
		name, in, want string
	}{
		{"plain", "fetching page 3: 500 Internal Server Error", "fetching page 3: 500 Internal Server Error"},
		{"nul", "detail\x00here", "detailhere"},
		{"ansi", "\x1b[31mred\x1b[0m", "[31mred[0m"},
		{"line breaks and tabs", "a\nb\r\nc\td", "a b  c d"},
		{"c1 and del", "a\u0085b\x7fc\u009bd", "abcd"},
		{"bidi override", "user \u202egnp.exe", "user gnp.exe"},
		{"invalid utf-8", "a\xffb", "a\uFFFDb"},
		{"unicode kept", "Zoë – 東京", "Zoë – 東京"},
		{"exactly the limit", strings.Repeat("x", warehouse.MaxErrorText), strings.Repeat("x", warehouse.MaxErrorText)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := warehouse.CleanText(tt.in); got != tt.want {
				t.Errorf("CleanText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	got := warehouse.CleanText(long)
	if len(got) > warehouse.MaxErrorText || !utf8.ValidString(got) || !strings.HasSuffix(got, "bytes in all]") ||
		!strings.HasPrefix(got, strings.Repeat("é", 900)) {
		t.Errorf("long text: %d bytes, valid %t, ends %q", len(got), utf8.ValidString(got), got[max(0, len(got)-40):])
	}
}

// TestFailRunHostileError: a failure whose text holds a NUL, terminal escapes
// and 5 MB still marks the run failed, with clean text of at most 2 KB.
func TestFailRunHostileError(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	hostile := "fetching page 3: 422: \x1b[31mbad\x1b[0m detail\x00 " + strings.Repeat("A", 5<<20)
	runID, err := s.Runs().Start(ctx, warehouse.KindIncremental, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Runs().End(ctx, runID, warehouse.RunEnding{End: warehouse.RunFailed, Err: errors.New(hostile)}); err != nil {
		t.Fatalf("FailRun: %v", err)
	}
	var status, stored string
	err = s.Pool().QueryRow(ctx, `SELECT status, error FROM `+quoted(s)+`.sync_runs WHERE run_id = $1`, runID).Scan(&status, &stored)
	if err != nil {
		t.Fatal(err)
	}
	if status != "failed" {
		t.Errorf("status = %s, want failed", status)
	}
	if len(stored) > 2048 || strings.ContainsAny(stored, "\x00\x1b") || !strings.HasPrefix(stored, "fetching page 3: 422: [31mbad[0m detail ") ||
		!strings.Contains(stored, "truncated") {
		t.Errorf("stored error: %d bytes: %q…", len(stored), stored[:min(len(stored), 80)])
	}
	st, err := s.Status(ctx, 5)
	if err != nil || len(st.Runs) != 1 || st.Runs[0].Error != stored {
		t.Errorf("Status: %v %+v", err, st.Runs)
	}
}

func quoted(s *warehouse.Store) string { return `"` + s.Schema() + `"` }

// TestCheckpointsNoRunResumes: a checkpoint no run will resume is cleared
// (it may hold what an earlier version stored of a next link, credentials
// included): an abandoned run's, and once a run of a kind succeeds, those of
// the earlier runs of that kind; a failed run of another kind keeps its own.
func TestCheckpointsNoRunResumes(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	start := func(kind string) int64 {
		t.Helper()
		id, err := s.Runs().Start(ctx, kind, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Pool().Exec(ctx, `UPDATE `+quoted(s)+`.sync_runs SET next_url = 'https://api.example/api/v2/users?page[after]=x&accessToken=S3CRET' WHERE run_id = $1`, id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	failed, abandoned, other := start(warehouse.KindIncremental), start(warehouse.KindIncremental), start(warehouse.KindFull)
	for _, id := range []int64{failed, other} {
		if err := s.Runs().End(ctx, id, warehouse.RunEnding{End: warehouse.RunFailed, Err: errors.New("fetching page 2: EOF")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Runs().Abandon(ctx, abandoned); err != nil {
		t.Fatal(err)
	}
	kept := func() (n int) {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+quoted(s)+`.sync_runs WHERE next_url IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := kept(); n != 2 {
		t.Fatalf("%d checkpoints kept after an abandon, want the 2 failed runs'", n)
	}
	next := start(warehouse.KindIncremental)
	if _, err := s.Runs().Finish(ctx, next, warehouse.RunSuccess{Summary: map[string]int{}}); err != nil {
		t.Fatal(err)
	}
	var keptRun int64
	if n := kept(); n != 1 {
		t.Fatalf("%d checkpoints kept after a success, want the other kind's failed run's", n)
	}
	if err := s.Pool().QueryRow(ctx, `SELECT run_id FROM `+quoted(s)+`.sync_runs WHERE next_url IS NOT NULL`).Scan(&keptRun); err != nil || keptRun != other {
		t.Errorf("kept run %d (%v), want %d", keptRun, err, other)
	}
}

func TestRunsAndWatermark(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	if w, err := s.Runs().Watermark(ctx); err != nil || !w.IsZero() {
		t.Fatalf("fresh watermark %v %v", w, err)
	}
	id, _ := s.Runs().Start(ctx, warehouse.KindIncremental, nil, nil, nil)
	cp := &warehouse.Checkpoint{RunID: id, NextURL: "n"}
	if _, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), `{"data": [`+warehousetest.User(4, "x", `{"data": []}`, `{"data": null}`)+`]}`), nil, cp); err != nil {
		t.Fatal(err)
	}
	// The run dies: the watermark has not moved, the run is resumable.
	if w, _ := s.Runs().Watermark(ctx); !w.IsZero() {
		t.Error("watermark moved before the run finished")
	}
	r, err := s.Runs().Unfinished(ctx, warehouse.KindIncremental)
	if err != nil || r == nil || r.ID != id || r.NextURL != "n" || r.Progress.Pages != 1 {
		t.Fatalf("unfinished run %+v %v", r, err)
	}
	fw, err := s.Runs().Finish(ctx, id, warehouse.RunSuccess{Summary: map[string]int{"pages": 1}, Advance: true})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Runs().Watermark(ctx)
	if !w.Equal(time.Date(2024, 1, 4, 0, 0, 0, 0, time.UTC)) || !fw.Equal(w) {
		t.Errorf("watermark %v, Finish returned %v", w, fw)
	}
	// A later run with older data never moves it back.
	id2, _ := s.Runs().Start(ctx, warehouse.KindBackfill, nil, nil, nil)
	cp2 := &warehouse.Checkpoint{RunID: id2}
	if _, err := loadtest.Users(t, s).Write(ctx, warehousetest.Rows(t, schema.User(), `{"data": [`+warehousetest.User(1, "x", `{"data": []}`, `{"data": null}`)+`]}`), nil, cp2); err != nil {
		t.Fatal(err)
	}
	fw2, err := s.Runs().Finish(ctx, id2, warehouse.RunSuccess{Advance: true})
	if err != nil {
		t.Fatal(err)
	}
	if w2, _ := s.Runs().Watermark(ctx); !w2.Equal(w) || !fw2.Equal(w) {
		t.Errorf("watermark moved back to %v, Finish returned %v", w2, fw2)
	}
}

func TestSyncLock(t *testing.T) {
	t.Parallel()
	s := warehousetest.NewStore(t)
	ctx := context.Background()
	l1, err := s.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryLock(ctx); !errors.Is(err, warehouse.ErrLocked) {
		t.Errorf("second lock: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		l, err := s.Lock(ctx)
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	l1.Release()
	if err := <-done; err != nil {
		t.Errorf("waiting lock: %v", err)
	}
}

package snapshot

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWriteChangedSkipsTheSame: WriteChanged writes the first snapshot,
// skips while no run changed anything (a run that changed nothing included),
// and writes again after a run that inserted users, or changed a team or a
// membership; Write always writes.
func TestWriteChangedSkipsTheSame(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 50)
	dest, _ := newLocal(t)
	clock := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	w, err := New(pool, name, dest, testLogger(t), func() time.Time { clock = clock.Add(time.Minute); return clock }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(counts, summary string) {
		t.Helper()
		if _, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %q.sync_runs (kind, status, started_at, finished_at, inserted, updated, summary)
			VALUES ('incremental', 'succeeded', now(), now(), %s, '%s')`, name, counts, summary)); err != nil {
			t.Fatal(err)
		}
	}
	first, err := w.WriteChanged(ctx)
	if err != nil {
		t.Fatal(err)
	}
	skips := func(what string) {
		t.Helper()
		if m, err := w.WriteChanged(ctx); !errors.Is(err, ErrUnchanged) || m.ID == "" {
			t.Errorf("%s: %s, %v; want it skipped", what, m.ID, err)
		}
	}
	writes := func(what string) string {
		t.Helper()
		m, err := w.WriteChanged(ctx)
		if err != nil || m.ID == first.ID {
			t.Errorf("%s: %s, %v; want a new snapshot", what, m.ID, err)
		}
		return m.ID
	}
	skips("nothing ran")
	run("0, 0", `{"dimensions": {"team": {"Inserted": 0, "Updated": 0, "Deleted": 0}}}`)
	skips("a run that changed nothing")
	run("3, 0", `{}`)
	second := writes("users inserted")
	skips("again")
	run("0, 0", `{"dimensions": {"team": {"Inserted": 0, "Updated": 1, "Deleted": 0}}}`)
	writes("a team renamed")
	run("0, 0", `{"membership": {"added": 0, "removed": 2}}`)
	writes("memberships removed")
	if m, err := w.Write(ctx); err != nil || m.ID == second {
		t.Errorf("Write: %s, %v; want a snapshot whatever changed", m.ID, err)
	}
}

// TestKeptIDs: retention keeps the newest Keep and the newest snapshot of
// each UTC day within KeepDaily.
func TestKeptIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"20261101T030000Z", "20261115T010000Z", "20261115T230000Z", "20261120T120000Z",
		"20261123T080000Z", "20261123T090000Z", "20261124T080000Z", "20261124T090000Z", "20261124T100000Z"}
	now := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		keep  int
		daily time.Duration
		want  []string
	}{
		{2, 0, []string{"20261124T090000Z", "20261124T100000Z"}},
		{2, 14 * 24 * time.Hour, []string{"20261115T230000Z", "20261120T120000Z", "20261123T090000Z", "20261124T090000Z", "20261124T100000Z"}},
		{1, 2 * 24 * time.Hour, []string{"20261123T090000Z", "20261124T100000Z"}},
	} {
		got := keptIDs(ids, tt.keep, tt.daily, now)
		if len(got) != len(tt.want) {
			t.Errorf("keep %d daily %s: kept %v, want %v", tt.keep, tt.daily, got, tt.want)
			continue
		}
		for _, id := range tt.want {
			if !got[id] {
				t.Errorf("keep %d daily %s: %s not kept (kept %v)", tt.keep, tt.daily, id, got)
			}
		}
	}
}

package jobs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
)

// TestIsDue: a periodic job is due at each tick (even one fired a little
// early) and at a start only when a tick was missed or it never ran.
func TestIsDue(t *testing.T) {
	t.Parallel()
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	tests := []struct {
		name, spec string
		last       *time.Time
		now        string
		want       bool
	}{
		{"never ran", "0 3 * * *", nil, "2026-11-24T14:00:00Z", true},
		{"daily: restart after today's run", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-24T14:00:00Z", false},
		{"daily: restart before tomorrow's", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T02:58:00Z", false},
		{"daily: the tick, fired early", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T02:59:59.5Z", true},
		{"daily: the tick", "0 3 * * *", at("2026-11-24T03:00:00.2Z"), "2026-11-25T03:00:00.01Z", true},
		{"daily: a missed tick", "0 3 * * *", at("2026-11-22T03:00:00.2Z"), "2026-11-24T14:00:00Z", true},
		{"hourly: restart", "@hourly", at("2026-11-24T10:00:01Z"), "2026-11-24T10:30:00Z", false},
		{"hourly: tick", "@hourly", at("2026-11-24T10:00:01Z"), "2026-11-24T11:00:00Z", true},
		{"every 15m: restart", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T10:05:00Z", false},
		{"every 15m: tick", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T10:15:00.001Z", true},
		{"every 15m: a worker down an hour", "@every 15m", at("2026-11-24T10:00:00.3Z"), "2026-11-24T11:05:00Z", true},
		{"zone: restart", "CRON_TZ=Europe/Paris 0 3 * * *", at("2026-11-24T02:00:00.5Z"), "2026-11-24T20:00:00Z", false},
		// the tick's job created 20 ms before the tick by the
		// database's clock (the database behind the worker) served it.
		{"daily: restart after a run created just before its tick", "0 3 * * *", at("2026-11-24T02:59:59.98Z"), "2026-11-24T14:00:00Z", false},
		{"daily: the tick after a run created just before its", "0 3 * * *", at("2026-11-24T02:59:59.98Z"), "2026-11-25T02:59:59.98Z", true},
		{"daily: the tick after a start 30 s before it", "0 3 * * *", at("2026-11-24T02:59:30Z"), "2026-11-24T03:00:00.01Z", false},
		{"daily: the tick after a start 2 min before it", "0 3 * * *", at("2026-11-24T02:58:00Z"), "2026-11-24T03:00:00.01Z", true},
		{"every 15m: tick, the database 20 ms behind", "@every 15m", at("2026-11-24T10:00:00.28Z"), "2026-11-24T10:14:59.98Z", true},
	}
	for _, tt := range tests {
		s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", tt.spec, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := isDue(s, tt.last, *at(tt.now)); got != tt.want {
			t.Errorf("%s: due %v, want %v", tt.name, got, tt.want)
		}
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestDueReadsTheDatabaseClock: the due check reads the
// database's clock for now, as for the jobs' created_at, so the worker's
// clock does not change its decision. A daily tick's job created 20 ms
// before the tick by the database's clock (the database behind the worker
// that fired it) served that tick: a restart minutes later adds no run,
// whatever the worker's clock says; a missed tick, or no run at all, is due.
func TestDueReadsTheDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 2)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	var dbNow time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	// Today's tick, ten minutes ago by the database's clock.
	tick := dbNow.UTC().Add(-10 * time.Minute).Truncate(time.Minute)
	s, err := ParseSchedule("USERSYNC_RECONCILE_SCHEDULE", fmt.Sprintf("%d %d * * *", tick.Minute(), tick.Hour()), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for kind, created := range map[string]time.Time{KindReconcile: tick.Add(-20 * time.Millisecond), KindSnapshot: tick.Add(-24 * time.Hour)} {
		if _, err := pool.Exec(ctx, `INSERT INTO `+schema.QuoteIdentifier(river)+`.river_job
			(kind, args, state, attempt, max_attempts, created_at, attempted_at, finalized_at)
			VALUES ($1, '{}', 'completed', 1, 10, $2, $2, $2)`, kind, created); err != nil {
			t.Fatal(err)
		}
	}
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for _, tt := range []struct {
		kind, why string
		want      bool
	}{
		{KindReconcile, "its tick's job was created 20 ms before the tick", false},
		{KindSnapshot, "yesterday's job ran, today's tick was missed", true},
		{KindSync, "it never ran", true},
	} {
		rdb, err := newRiverDB(pool, river)
		if err != nil {
			t.Fatal(err)
		}
		d := &due{river: rdb, kind: tt.kind, schedule: s, logger: logger}
		for _, off := range []time.Duration{0, -20 * time.Millisecond, 20 * time.Millisecond, -15 * time.Minute, time.Hour, -25 * time.Hour} {
			if got := d.now(time.Now().Add(off)); got != tt.want {
				t.Errorf("%s (%s), the worker's clock %s off: due %v, want %v", tt.kind, tt.why, off, got, tt.want)
			}
		}
	}
	if !strings.Contains(logs.String(), "the worker's clock differs from the database's") {
		t.Errorf("a worker an hour off was not warned about:\n%s", logs.String())
	}
}

// TestDueFailsClosed: when the due check cannot read the
// jobs, it inserts nothing and logs why at ERROR; the next tick or start
// decides again.
func TestDueFailsClosed(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 1)
	s, err := ParseSchedule("USERSYNC_SYNC_SCHEDULE", "@hourly", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	rdb, err := newRiverDB(pool, "usersync_no_such_river")
	if err != nil {
		t.Fatal(err)
	}
	d := &due{river: rdb, kind: KindSync, schedule: s, logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if d.now(time.Now()) {
		t.Error("a failed check inserts the job")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "not inserting it now") {
		t.Errorf("the failed check is not logged at ERROR:\n%s", logs.String())
	}
}

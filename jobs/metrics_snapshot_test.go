package jobs

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
)

// TestSnapshotJobs: the last success is the newest completed snapshot job
// that left a current snapshot (written, or skipped as unchanged; not one
// skipped because no run had completed, not a failed one), with its size;
// Since is the oldest snapshot job kept in any state; other kinds do not
// count, and a missing River schema reads as no jobs.
func TestSnapshotJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 2)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if st, err := SnapshotJobs(ctx, pool, river, DefaultAccount); err != nil || st != (SnapshotJobState{}) {
		t.Fatalf("without River's schema: %+v, %v", st, err)
	}
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if st, err := SnapshotJobs(ctx, pool, river, DefaultAccount); err != nil || st != (SnapshotJobState{}) {
		t.Fatalf("with no jobs: %+v, %v", st, err)
	}
	q := schema.QuoteIdentifier(river)
	for _, j := range []struct {
		kind, state, output string
		age                 string // created and finalized now() - age
	}{
		{KindSync, "completed", `{}`, "9 days"},
		{KindSnapshot, "discarded", ``, "7 days"},
		{KindSnapshot, "completed", `{"id": "20261120T000000Z", "bytes": 1000}`, "5 hours"},
		{KindSnapshot, "completed", `{"id": "20261120T000000Z", "skipped": true, "reason": "nothing changed", "bytes": 2048}`, "3 hours"},
		{KindSnapshot, "completed", `{"skipped": true, "reason": "a run is under way", "not_ready": true}`, "2 hours"},
		{KindSnapshot, "retryable", ``, "1 hour"},
	} {
		meta := `{}`
		if j.output != "" {
			meta = `{"output": ` + j.output + `}`
		}
		if _, err := pool.Exec(ctx, `INSERT INTO `+q+`.river_job (kind, args, state, attempt, max_attempts, created_at, attempted_at, finalized_at, metadata)
			VALUES ($1, '{}', $2::text::`+q+`.river_job_state, 1, 10, now() - $3::interval, now() - $3::interval,
			        CASE WHEN $2 IN ('completed', 'discarded') THEN now() - $3::interval END, $4::jsonb)`,
			j.kind, j.state, j.age, meta); err != nil {
			t.Fatalf("inserting a %s %s job: %v", j.state, j.kind, err)
		}
	}
	st, err := SnapshotJobs(ctx, pool, river, DefaultAccount)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got time.Time, ago time.Duration) bool {
		d := time.Since(got) - ago
		return d > -time.Minute && d < time.Minute
	}
	if !near(st.LastSuccess, 3*time.Hour) || st.LastBytes != 2048 {
		t.Errorf("last success %v (%v ago) of %d bytes, want the unchanged one 3 hours ago of 2048", st.LastSuccess, time.Since(st.LastSuccess), st.LastBytes)
	}
	if !near(st.Since, 7*24*time.Hour) {
		t.Errorf("since %v ago, want the discarded snapshot job's 7 days", time.Since(st.Since))
	}
}

func TestScheduleInterval(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 7, 0, 0, time.UTC) // a Friday
	for spec, want := range map[string]time.Duration{
		"@hourly":     time.Hour,
		"@every 15m":  15 * time.Minute,
		"0 3 * * *":   24 * time.Hour,
		"0 3 * * 1-5": 3 * 24 * time.Hour, // Friday to Monday
		"0 0 1 * *":   31 * 24 * time.Hour,
		"off":         0,
	} {
		s, err := ParseSchedule("USERSYNC_SNAPSHOT_SCHEDULE", spec, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got := ScheduleInterval(s, now); got != want {
			t.Errorf("%s: %v, want %v", spec, got, want)
		}
	}
}

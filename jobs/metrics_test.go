package jobs

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
)

// TestOldestRunningJobs: the age is that of the oldest running job of each
// kind, 0 for a kind with none running (jobs in other states, however old,
// and other programs' kinds do not count), and every kind is listed whether
// or not River's schema exists, so the alert on it never reads a gap.
func TestOldestRunningJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 2)
	river := RiverSchema(schematest.NewSchemaName(t, pool))

	d := DefaultAccount
	zero := []JobAge{{d, KindSync, 0}, {d, KindBackfill, 0}, {d, KindReconcile, 0}, {d, KindSnapshot, 0}}
	got, err := OldestRunningJobs(ctx, pool, river)
	if err != nil || !slices.Equal(got, zero) {
		t.Fatalf("without River's schema: %v, %v; want %v", got, err, zero)
	}
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	got, err = OldestRunningJobs(ctx, pool, river)
	if err != nil || !slices.Equal(got, zero) {
		t.Fatalf("with no jobs: %v, %v; want %v", got, err, zero)
	}

	for _, j := range []struct {
		kind, state string
		age         string // attempted_at = now() - age
	}{
		{KindReconcile, "running", "3 hours"},
		{KindReconcile, "running", "10 minutes"},
		{KindReconcile, "completed", "30 hours"},
		{KindSync, "running", "90 seconds"},
		{KindSync, "retryable", "5 hours"},
		{KindSnapshot, "available", "9 hours"},
		{"other_program_job", "running", "20 hours"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO `+schema.QuoteIdentifier(river)+`.river_job
			(kind, args, state, attempt, max_attempts, attempted_at, finalized_at)
			VALUES ($1, '{}', $2::text::`+schema.QuoteIdentifier(river)+`.river_job_state, 1, 10, now() - $3::interval,
			        CASE WHEN $2 = 'completed' THEN now() END)`, j.kind, j.state, j.age); err != nil {
			t.Fatalf("inserting a %s %s job: %v", j.state, j.kind, err)
		}
	}
	got, err = OldestRunningJobs(ctx, pool, river)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{KindSync: 90 * time.Second, KindBackfill: 0, KindReconcile: 3 * time.Hour, KindSnapshot: 0}
	if len(got) != len(want) {
		t.Fatalf("got %v, want one age for each of %v", got, Kinds())
	}
	for i, ja := range got {
		if ja.Kind != Kinds()[i] {
			t.Errorf("age %d is for %q, want %q", i, ja.Kind, Kinds()[i])
		}
		// The statements run within seconds of each other.
		if w := want[ja.Kind]; ja.Running < w || ja.Running > w+time.Minute {
			t.Errorf("%s: oldest running for %v, want %v", ja.Kind, ja.Running, w)
		}
	}
}

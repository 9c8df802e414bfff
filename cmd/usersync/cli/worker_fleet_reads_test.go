package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// TestWorkerFleetReadsWhatChanged: what the
// worker's fleet reads of the registry at each tick and for each job.
//
//   - A job's Open reads its own account's row: another account's row,
//     edited by hand into settings that are not all strings, neither stops
//     it nor the tick's listing of the others.
//   - An account whose settings do not parse is warned about once per change
//     of its stored row, not at every tick.
//   - The stores: the fleet keeps one per registered account, since
//     Registered hands it to the metrics, which read every
//     account's warehouse at each scrape; a removed account's store
//     leaves with its last use (the registry's listing and the cache of open
//     accounts), so the map does not grow with every account ever seen.
func TestWorkerFleetReadsWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tf := newTestFleet(t)
	f := tf.f
	f.SetCache(1)
	a := newCLIEnv(t, apisim.Options{Seed: 53, Users: 20})
	tf.add(t, "a", a, nil)
	b := newCLIEnv(t, apisim.Options{Seed: 54, Users: 20})
	tf.add(t, "b", b, nil)
	tf.add(t, "c", a, map[string]string{"USERSYNC_SCHEMA": schematest.NewSchemaName(t, tf.pool)})
	tf.add(t, "x", a, map[string]string{"USERSYNC_SCHEMA": schematest.NewSchemaName(t, tf.pool), "USERSYNC_PAGE_SIZE": "lots"})
	if _, err := f.Open(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for range 3 { // three ticks
		reg, err := f.Registered(ctx, nil)
		if err != nil || len(reg) != 4 { // the environment's and a, b, c
			t.Fatalf("Registered beside x's row: %d accounts, %v", len(reg), err)
		}
	}
	warnings := func(account string) int {
		return strings.Count(tf.logs.String(), "an account's settings are not valid; its jobs are not scheduled\" account="+account+" ")
	}
	if n := warnings("x"); n != 1 {
		t.Errorf("x's settings that do not parse were warned about %d times in 3 ticks, want once", n)
	}
	if err := tf.reg.UpdateSettings(ctx, "x", map[string]string{"USERSYNC_PAGE_SIZE": "more"}); err != nil {
		t.Fatal(err)
	}
	_, _ = f.Registered(ctx, nil)
	_, _ = f.Registered(ctx, nil)
	if n := warnings("x"); n != 2 {
		t.Errorf("x's row changed: %d warnings in all, want 2", n)
	}

	if n := f.Stores(); n != 4 {
		t.Errorf("%d stores kept for the environment's and the 3 registered accounts with valid settings", n)
	}
	for _, name := range []string{"a", "c"} {
		if err := tf.reg.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = f.Registered(ctx, nil)
	// b is registered; a, removed, is still open (the cache's one entry)
	// until another account is opened; c is neither.
	if n := f.Stores(); n != 3 {
		t.Errorf("%d stores kept for the environment's, b and the open a, want 3", n)
	}
	if _, err := f.Open(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if n := f.Stores(); n != 2 {
		t.Errorf("%d stores kept once a left the cache, want 2 (the environment's and b's)", n)
	}

	if _, err := tf.pool.Exec(ctx, `INSERT INTO "`+tf.e.riverSchema()+`".accounts (name, settings) VALUES ('y', $1)`,
		`{"USERSYNC_SCHEMA": "`+schematest.NewSchemaName(t, tf.pool)+`", "USERSYNC_PAGE_SIZE": 5}`); err != nil {
		t.Fatal(err)
	}
	if err := tf.reg.UpdateSettings(ctx, "b", map[string]string{"USERSYNC_PAGE_SIZE": "40"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(ctx, "b"); err != nil { // b's settings changed: its row is read again
		t.Errorf("opening b beside y's row edited by hand: %v", err)
	}
	if reg, err := f.Registered(ctx, nil); err != nil || len(reg) != 2 || reg[0].Name != jobs.DefaultAccount || reg[1].Name != "b" {
		t.Errorf("Registered beside y's row edited by hand: %+v, %v", reg, err)
	}
	if n := warnings("y"); n != 1 {
		t.Errorf("y's row was warned about %d times, want once", n)
	}
}

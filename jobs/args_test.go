package jobs

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

// TestJobsStoredFormIsStable pins what River stores of each job: its kind
// and its arguments' JSON. Jobs queued by one release are worked by the
// next after an upgrade, so a renamed kind would leave them unworked and a
// renamed field would run a backfill of another range.
func TestJobsStoredFormIsStable(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	until := since.Add(48 * time.Hour)
	for _, c := range []struct {
		args   river.JobArgs
		kind   string
		stored string
	}{
		{SyncArgs{}, "usersync_sync", `{}`},
		{SyncArgs{Account: "a", Slow: true}, "usersync_sync", `{"account":"a","slow":true}`},
		{ReconcileArgs{}, "usersync_reconcile", `{}`},
		{SnapshotArgs{}, "usersync_snapshot", `{}`},
		{DueArgs{}, "usersync_due", `{}`},
		{ViewsArgs{}, "usersync_views", `{}`},
		{BackfillArgs{Full: true}, "usersync_backfill", `{"full":true}`},
		{BackfillArgs{Since: &since, Until: &until}, "usersync_backfill",
			`{"since":"2026-01-02T03:04:05Z","until":"2026-01-04T03:04:05Z"}`},
	} {
		if got := c.args.Kind(); got != c.kind {
			t.Errorf("%T: kind %q; jobs already queued are of kind %q", c.args, got, c.kind)
		}
		got, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.stored {
			t.Errorf("%T: stored as %s; jobs already queued hold %s", c.args, got, c.stored)
		}
		back := reflect.New(reflect.TypeOf(c.args))
		if err := json.Unmarshal([]byte(c.stored), back.Interface()); err != nil {
			t.Fatalf("%T: decoding %s: %v", c.args, c.stored, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), c.args) {
			t.Errorf("%T: %s decodes to %+v; want %+v", c.args, c.stored, back.Elem().Interface(), c.args)
		}
	}
}

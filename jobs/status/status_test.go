package status

import (
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs"
)

// TestStatusJobsShowTheSlowLane: status says which of an account's syncs
// are in the slow lane.
func TestStatusJobsShowTheSlowLane(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	printJobs(&b, []jobs.JobCount{{Kind: jobs.KindSync, State: "running", Queue: jobs.QueueSlow, Count: 1},
		{Kind: jobs.KindSync, State: "available", Queue: jobs.QueueSync, Count: 2}})
	if want := "jobs         sync (slow lane) running: 1, sync available: 2\n"; !strings.Contains(b.String(), want) {
		t.Errorf("status's jobs:\n%s\nwant %q", b.String(), want)
	}
}

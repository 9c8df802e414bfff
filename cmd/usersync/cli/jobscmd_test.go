package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/apisim"
)

// jobsList runs usersync jobs list --json with args and returns the jobs.
func jobsList(t *testing.T, env map[string]string, args ...string) []jobs.JobLine {
	t.Helper()
	code, out, errs := run(t, env, append([]string{"jobs", "list", "--json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("jobs list: exit %d: %s", code, errs)
	}
	var got struct {
		Version int            `json:"version"`
		Jobs    []jobs.JobLine `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Version != 1 {
		t.Fatalf("jobs list --json: version %d, %v\n%s", got.Version, err, out)
	}
	return got.Jobs
}

// TestJobsListCancelRetry: usersync jobs list shows the
// queue's jobs with their state, attempts and last error on one line;
// jobs cancel and jobs retry move a job, say what they did, and refuse an
// unknown or malformed id.
func TestJobsListCancelRetry(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 65, Users: 5})
	if code, out, _ := run(t, c.env, "jobs", "list"); code != ExitOK || out != "no jobs\n" {
		t.Errorf("jobs list of an empty queue: exit %d %q", code, out)
	}
	for _, args := range [][]string{{"backfill", "--full"}, {"backfill", "--since", "2026-01-01"}} {
		if code, _, errs := run(t, c.env, args...); code != ExitOK {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	list := jobsList(t, c.env)
	if len(list) != 2 || list[0].Kind != jobs.KindBackfill || list[0].State != "available" || !strings.Contains(string(list[0].Args), `"since"`) ||
		list[0].Account != jobs.DefaultAccount || list[0].Queue != jobs.QueueLong {
		t.Fatalf("jobs list: %+v", list)
	}
	older, newer := list[1].ID, list[0].ID
	// A job that failed its attempts, as a worker would leave it, written through River's driver.
	now := time.Now()
	if _, err := riverpgxv5.New(c.store.Pool()).GetExecutor().JobUpdateFull(context.Background(), &riverdriver.JobUpdateFullParams{
		ID: older, Schema: c.store.Schema() + "_river", StateDoUpdate: true, State: rivertype.JobStateDiscarded,
		AttemptDoUpdate: true, Attempt: 1, AttemptedAtDoUpdate: true, AttemptedAt: &now, FinalizedAtDoUpdate: true, FinalizedAt: &now,
		ErrorsDoUpdate: true, Errors: [][]byte{[]byte(`{"at": "2026-11-27T10:00:00Z", "attempt": 1, "error": "syncing users: fetching users page 3:\n503 Service Unavailable", "trace": ""}`)},
	}); err != nil {
		t.Fatal(err)
	}

	code, out, errs := run(t, c.env, "jobs", "list")
	if code != ExitOK || !strings.Contains(out, fmt.Sprintf("%8d  default           usersync_backfill   usersync_long      discarded    1/", older)) ||
		!strings.Contains(out, "syncing users: fetching users page 3: 503 Service Unavailable\n") {
		t.Errorf("jobs list: exit %d %s\n%s", code, errs, out)
	}
	if code, out, errs := run(t, c.env, "jobs", "cancel", fmt.Sprint(newer)); code != ExitOK || out != fmt.Sprintf("job %d usersync_backfill: cancelled\n", newer) {
		t.Errorf("jobs cancel: exit %d %q %s", code, out, errs)
	}
	if code, out, errs := run(t, c.env, "jobs", "retry", fmt.Sprint(older)); code != ExitOK || !strings.Contains(out, "available: a worker picks it up now") {
		t.Errorf("jobs retry: exit %d %q %s", code, out, errs)
	}
	states := map[int64]string{}
	for _, j := range jobsList(t, c.env) {
		states[j.ID] = j.State
	}
	if states[older] != "available" || states[newer] != "cancelled" {
		t.Errorf("after cancel and retry: %v", states)
	}
	if got := jobsList(t, c.env, "--state", "cancelled"); len(got) != 1 || got[0].ID != newer {
		t.Errorf("jobs list --state cancelled: %+v", got)
	}
	if code, _, errs := run(t, c.env, "jobs", "cancel", "987654321"); code != ExitFailure || !strings.Contains(errs, "no job 987654321 in ") {
		t.Errorf("jobs cancel of an unknown id: exit %d %s", code, errs)
	}
	for _, args := range [][]string{{"jobs", "retry", "x1"}, {"jobs", "retry"}, {"jobs", "list", "--state", "done"}, {"jobs"}} {
		if code, _, errs := run(t, c.env, args...); code != ExitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, want %d with one line: %s", args, code, ExitUsage, errs)
		}
	}
}

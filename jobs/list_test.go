package jobs

import (
	"slices"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"
)

// TestParseJobStates: no --state is every state but completed (all of them
// with --all); a list is taken as given, and an unknown state is refused by
// name.
func TestParseJobStates(t *testing.T) {
	t.Parallel()
	def, err := ParseJobStates("", false)
	if err != nil || slices.Contains(def, rivertype.JobStateCompleted) || len(def) != len(rivertype.JobStates())-1 {
		t.Errorf("default states %v (%v)", def, err)
	}
	if all, _ := ParseJobStates("", true); len(all) != len(rivertype.JobStates()) {
		t.Errorf("--all states %v", all)
	}
	if got, err := ParseJobStates("running, discarded", false); err != nil || !slices.Equal(got, []rivertype.JobState{"running", "discarded"}) {
		t.Errorf("--state running, discarded: %v (%v)", got, err)
	}
	if _, err := ParseJobStates("running,done", false); err == nil || !strings.Contains(err.Error(), `"done"`) {
		t.Errorf("--state done: %v", err)
	}
}

// TestListedAccountOf: a job's account is the one its arguments name, the
// default account's when none, "-" for the fleet's own jobs.
func TestListedAccountOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ kind, args, want string }{
		{"usersync_sync", `{"account":"eu"}`, "eu"},
		{"usersync_sync", `{}`, DefaultAccount},
		{KindDue, `{"account":"eu"}`, "-"},
	} {
		if got := listedAccountOf(tt.kind, []byte(tt.args)); got != tt.want {
			t.Errorf("%s %s: %q, want %q", tt.kind, tt.args, got, tt.want)
		}
	}
}

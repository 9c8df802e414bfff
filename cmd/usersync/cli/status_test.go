package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestStatusCleansStoredErrors: a run error stored before errors were
// cleaned (terminal escapes, 5 MB) and an unknown attribute's name with an
// escape are printed clean and short by status, as text and as JSON.
func TestStatusCleansStoredErrors(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 61, Users: 10})
	ctx := context.Background()
	_, err := c.store.Pool().Exec(ctx, `INSERT INTO "`+c.store.Schema()+`".sync_runs (kind, status, finished_at, error, unknown_attributes)
		VALUES ('incremental', 'failed', now(), 'fetching page 3: '||chr(27)||'[2J'||chr(27)||'[31mowned'||chr(13)||repeat('A', 5000000), '{}'),
		('incremental', 'succeeded', now(), NULL, jsonb_build_object('evil'||chr(27)||'[31m', 2))`)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, c.env, "status")
	if code != ExitOK {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\r") || len(out) > 8<<10 || !strings.Contains(out, "error: fetching page 3: [2J[31mowned") ||
		!strings.Contains(out, "evil[31m (2)") {
		t.Errorf("status prints %d bytes: %q", len(out), out[:min(len(out), 1500)])
	}
	code, out, errs = run(t, c.env, "status", "--json")
	if code != ExitOK {
		t.Fatalf("status --json: exit %d: %s", code, errs)
	}
	var st warehouse.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Runs) != 2 || len(st.Runs[1].Error) > warehouse.MaxErrorText || strings.ContainsAny(st.Runs[1].Error, "\x1b\r") ||
		st.Drift["evil[31m"] != 2 || len(out) > 8<<10 {
		t.Errorf("status --json prints %d bytes: %q", len(out), out[:min(len(out), 1500)])
	}
}

func TestStatusRunsFlag(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 62, Users: 10})
	code, _, errs := run(t, c.env, "status", "--runs", "-1")
	if code != ExitUsage || !strings.Contains(errs, "--runs") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("status --runs -1: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := run(t, c.env, "status", "--runs", "0"); code != ExitOK {
		t.Errorf("status --runs 0: exit %d: %s", code, errs)
	}
}

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
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

// TestStatusShowsSpentBudget: once the token owner's other tools have taken
// the API's rate limit below what USERSYNC_API_BUDGET keeps for them, the
// next full sync pauses on the spent budget after its first requests, and status's "api budget" line shows
// what that run saw and says the budget is spent (it used to show the last
// successful run's figures, or vanish when there was none).
func TestStatusShowsSpentBudget(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 63, Users: 300, Knobs: apisim.Knobs{RateLimit: 100}})
	env := c.env
	env["USERSYNC_API_BUDGET"] = "0.5" // 50 of 100 kept for other tools
	env["USERSYNC_PAGE_SIZE"] = "100"  // a full sync: 3 pages and 3 lists
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync --full: exit %d: %s", code, errs)
	}
	budgetLine := regexp.MustCompile(`(?m)^api budget +(.*)$`)
	_, out, _ := run(t, env, "status")
	if m := budgetLine.FindStringSubmatch(out); m == nil || strings.Contains(m[1], "spent") || !strings.Contains(m[1], " of 100 requests left") {
		t.Fatalf("status after a sync within the budget:\n%s", out)
	}
	otherTool(t, c, 50)
	code, _, errs := run(t, env, "sync", "--full")
	if code != ExitFailure || !strings.Contains(errs, "USERSYNC_API_BUDGET") {
		t.Fatalf("sync past the budget: exit %d: %s", code, errs)
	}
	_, out, _ = run(t, env, "status")
	m := budgetLine.FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], "spent: ") || !strings.Contains(m[1], "keeps 50 ") || !strings.Contains(m[1], "resets ") {
		t.Errorf("status once the budget is spent:\n%s", out)
	}
	var remaining *int
	if err := c.store.Pool().QueryRow(context.Background(), `SELECT (summary->'rate_limit'->>'remaining')::int FROM "`+c.store.Schema()+
		`".sync_runs WHERE status = 'paused' ORDER BY run_id DESC LIMIT 1`).Scan(&remaining); err != nil {
		t.Fatal(err)
	}
	switch {
	case remaining == nil:
		t.Error("the paused run kept no rate limit")
	case *remaining > 50:
		t.Errorf("the paused run saw %d requests left, above the 50 kept", *remaining)
	case m != nil && !strings.Contains(m[1], fmt.Sprintf(" %d of 100 requests left", *remaining)):
		t.Errorf("status does not show the %d requests left the paused run saw:\n%s", *remaining, out)
	}
}

// TestStatusShowsBudgetSpentBeforeAnySuccess: when the first sync already
// finds the budget spent, status shows the "api budget" line, saying so
// (it used to leave the line out).
func TestStatusShowsBudgetSpentBeforeAnySuccess(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 64, Users: 300, Knobs: apisim.Knobs{RateLimit: 100}})
	env := c.env
	env["USERSYNC_API_BUDGET"], env["USERSYNC_PAGE_SIZE"] = "0.5", "100"
	otherTool(t, c, 55)
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitFailure || !strings.Contains(errs, "USERSYNC_API_BUDGET") {
		t.Fatalf("sync past the budget: exit %d: %s", code, errs)
	}
	_, out, _ := run(t, env, "status")
	if !regexp.MustCompile(`(?m)^api budget +spent: \d+ of 100 requests left .*keeps 50 `).MatchString(out) {
		t.Errorf("status once the budget is spent, before any run succeeded:\n%s", out)
	}
}

// otherTool spends n requests of the simulator's rate limit, as another
// tool of the token's owner would.
func otherTool(t *testing.T, c *cliEnv, n int) {
	t.Helper()
	for range n {
		req, err := http.NewRequest(http.MethodGet, c.srv.URL+"/api/v2/roles", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer cli-test-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// TestInterruptedSyncInStatus: an inline sync stopped by Ctrl-C (its
// context cancelled) mid-way is recorded interrupted, not failed; status,
// text and JSON, shows it so; the next sync resumes it.
func TestInterruptedSyncInStatus(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 63, Users: 3000, Knobs: apisim.Knobs{Latency: 20 * time.Millisecond}})
	env := map[string]string{"USERSYNC_PAGE_SIZE": "100"}
	for k, v := range c.env {
		env[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // Ctrl-C once two pages committed
		for ctx.Err() == nil {
			var pages int64
			_ = c.store.Pool().QueryRow(ctx, `SELECT coalesce(max(pages), 0) FROM "`+c.store.Schema()+`".sync_runs`).Scan(&pages)
			if pages >= 2 {
				cancel()
				return
			}
			<-time.After(20 * time.Millisecond)
		}
	}()
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"sync"}, environ(env), &out, &errb); code != ExitFailure || !strings.Contains(errb.String(), "run interrupted") {
		t.Fatalf("interrupted sync: exit %d: %s", code, errb.String())
	}
	code, text, _ := run(t, env, "status")
	// The stop's error may say "write failed" (the COPY cut off by the
	// cancel): what must not say failed is a run's status column.
	if code != ExitOK || !regexp.MustCompile(`\n\s+1  incremental\s+interrupted `).MatchString(text) || !strings.Contains(text, "stopped: run interrupted") ||
		regexp.MustCompile(`\n\s+\d+  \S+\s+failed `).MatchString(text) {
		t.Errorf("status does not show the run interrupted:\n%s", text)
	}
	code, js, _ := run(t, env, "status", "--json")
	var st warehouse.Status
	if err := json.Unmarshal([]byte(js), &st); code != ExitOK || err != nil || len(st.Runs) != 1 || st.Runs[0].Status != "interrupted" {
		t.Errorf("status --json: %v %+v", err, st.Runs)
	}
	code, text, errs := run(t, env, "sync")
	if code != ExitOK || !strings.Contains(text, "incremental run 1 (resumed) finished") {
		t.Errorf("the next sync: exit %d: %s%s", code, text, errs)
	}
}

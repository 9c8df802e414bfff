package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// badKeys returns the keys of v, at any depth, that are not snake_case,
// with their path.
func badKeys(v any, path string) []string {
	snakeKey := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if !snakeKey.MatchString(k) {
				out = append(out, path+"."+k)
			}
			if k != "unknown_attributes" { // keyed by the API's names of attributes the catalog does not know
				out = append(out, badKeys(child, path+"."+k)...)
			}
		}
	case []any:
		for i, child := range v {
			out = append(out, badKeys(child, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	sort.Strings(out)
	return out
}

// assertJSONStyle checks out is one JSON object with "version": 1 and
// snake_case keys throughout.
func assertJSONStyle(t *testing.T, what, out string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Errorf("%s: not a JSON object: %v\n%s", what, err, out)
		return
	}
	if doc["version"] != float64(1) {
		t.Errorf("%s: version is %v, want 1", what, doc["version"])
	}
	if bad := badKeys(doc, ""); len(bad) > 0 {
		t.Errorf("%s: keys not in snake_case: %v", what, bad)
	}
}

// TestJSONOutputsAreSnakeCaseAndVersioned: every command's
// --json output, and every run's sync_runs.summary, is one object with
// "version": 1 first and snake_case keys at every depth.
func TestJSONOutputsAreSnakeCaseAndVersioned(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 66, Users: 40, TokenTTL: time.Hour, Knobs: apisim.Knobs{RateLimit: 10000}},
		map[string]string{"USERSYNC_SNAPSHOT_DIR": t.TempDir()})
	if code, out, errs := a.login(t); code != ExitOK {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, a.oauth, "backfill", "--since", "2026-01-01"); code != ExitOK { // a job for jobs list
		t.Fatal(errs)
	}
	user := fmt.Sprint(a.sim.UserIDs()[0])
	for _, args := range [][]string{
		{"sync", "--full", "--json"}, {"reconcile", "--json"}, {"snapshot", "--json"}, {"status", "--json"},
		{"auth", "status", "--json"}, {"forget", "--user", user, "--json"}, {"check", "--json"}, {"jobs", "list", "--json"},
	} {
		code, out, errs := run(t, a.oauth, args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d: %s", args, code, errs)
			continue
		}
		assertJSONStyle(t, fmt.Sprint(args), out)
		if len(out) < 20 || out[:16] != "{\n  \"version\": 1" {
			t.Errorf("%v: version is not the first key:\n%.80s", args, out)
		}
	}
	rows, err := a.store.Pool().Query(context.Background(), `SELECT run_id, kind, summary::text FROM "`+a.store.Schema()+`".sync_runs ORDER BY run_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	runs := 0
	for rows.Next() {
		var id int64
		var kind, summary string
		if err := rows.Scan(&id, &kind, &summary); err != nil {
			t.Fatal(err)
		}
		assertJSONStyle(t, fmt.Sprintf("sync_runs.summary of %s run %d", kind, id), summary)
		runs++
	}
	if rows.Err() != nil || runs != 2 {
		t.Errorf("%d runs (want the sync and the reconcile): %v", runs, rows.Err())
	}
}

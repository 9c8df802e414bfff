package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestScaleShort is the short form of make scale that make test runs:
// 20 accounts of 200 users and one of 5,000, one faulty
// (5xx), one whose token is revoked once all are mirrored, two replicas
// restarted in turn, syncs every 5 s; the table is printed and every check
// must pass.
func TestScaleShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"-seed", "1", "-scale", "-accounts", "21", "-account-users", "200",
		"-large", "1", "-large-users", "5000", "-faulty", "1", "-revoked", "1", "-replicas", "2",
		"-sync-every", "5s", "-reconcile-every", "1m", "-after", "30s", "-restart-every", "25s"}, &out, &out)
	t.Log("\n" + out.String())
	if code != 0 || !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("scale: exit %d", code)
	}
	for _, want := range []string{"every account first mirrored", "worst staleness", "peak RSS of worker 1", "pg_class rows", "jobs River ran", "restarted replica 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the scale run's output lacks %q", want)
		}
	}
}

// TestScaleFindsAWrongWarehouse: the scale run's checks fail when one
// account's warehouse differs from its API (a user changed behind the
// sync's back, -break-account), and name that account.
func TestScaleFindsAWrongWarehouse(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"-seed", "2", "-scale", "-accounts", "3", "-account-users", "100",
		"-large", "0", "-faulty", "0", "-revoked", "0", "-replicas", "1", "-sync-every", "2s", "-after", "5s",
		"-restart-every", "0", "-churn=false", "-break-account", "acct_002"}, &out, &out)
	t.Log("\n" + out.String())
	if code == 0 || !strings.Contains(out.String(), "FAILED: account acct_002's warehouse differs from its API") {
		t.Fatalf("scale with a broken warehouse: exit %d, want 1 and the check naming acct_002", code)
	}
	if strings.Contains(out.String(), "account acct_001's warehouse differs") || strings.Contains(out.String(), "account acct_003's warehouse differs") {
		t.Error("the check blamed an account that was not broken")
	}
	if strings.Contains(out.String(), "does not unite") {
		t.Error("the union views did not unite the accounts while the workers ran")
	}
}

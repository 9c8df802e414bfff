package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestChaosShort is the short form of make chaos that make test runs: a few
// faults of every kind, kills included, on a small dataset.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"-seed", "1", "-faults", "10", "-kills", "3", "-users", "1500"}, &out, &out)
	t.Log("\n" + out.String())
	if code != 0 || !strings.Contains(out.String(), "10 passed, 0 failed") {
		t.Fatalf("chaos: exit %d", code)
	}
}

// TestSoakShort is the 60-second form of make soak: two replicas, restarts
// when they fall in the minute (they follow the reconcile's ticks), a
// backfill holding the lock for 15 s or more, a budget kept above its floor
// links-only teams.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	var out bytes.Buffer
	code := run(context.Background(), []string{"-seed", "1", "-soak", "60s", "-users", "1500"}, &out, &out)
	t.Log("\n" + out.String())
	if code != 0 || !strings.Contains(out.String(), "1 passed, 0 failed") {
		t.Fatalf("soak: exit %d", code)
	}
}

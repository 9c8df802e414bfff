package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestBenchmarksCiteTheSoakFloor: the floor docs/benchmarks.md cites for the
// soak's lowest x-ratelimit-remaining is the one the soak checks, with its
// rate limit and budget share.
func TestBenchmarksCiteTheSoakFloor(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`lowest .x-ratelimit-remaining. \(floor (\d+) of (\d+)(?:[^|]*USERSYNC_API_BUDGET=([0-9.]+))?`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/benchmarks.md no longer cites the soak's floor as \"lowest `x-ratelimit-remaining` (floor N of LIMIT …\"")
	}
	floor, _ := strconv.Atoi(string(m[1]))
	limit, _ := strconv.Atoi(string(m[2]))
	share, _ := strconv.ParseFloat(string(m[3]), 64) // 0 when the row does not say
	if want := soakFloor(2); floor != want || limit != soakRateLimit || share != soakBudget {
		t.Errorf("docs/benchmarks.md cites floor %d of %d at USERSYNC_API_BUDGET=%g; the soak checks floor %d of %d at %g",
			floor, limit, share, want, soakRateLimit, soakBudget)
	}
}

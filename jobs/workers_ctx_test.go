package jobs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestJobContextNamesItsAccount: a job's context names its account
// (AccountOf), for what the job calls: an authenticator waiting for the
// account's OAuth login names the login to run.
func TestJobContextNamesItsAccount(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]string{} // the job's account: the one its context named
	startUnreadable(t, func(ctx context.Context, name string) {
		inCtx, _ := AccountOf(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen[name] = inCtx
	})
	waitUntil(t, "both jobs to open their account", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if seen["eu"] != "eu" || seen[DefaultAccount] != DefaultAccount {
		t.Errorf("the jobs' contexts named %v, want each its own account", seen)
	}
}

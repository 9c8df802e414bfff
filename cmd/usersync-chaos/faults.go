package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// fault is one injected failure. apply runs while the system works; it
// returns a note for the report, or an error if the fault itself misbehaved
// (a worker that did not stop cleanly on SIGTERM, say).
type fault struct {
	name  string
	apply func(ctx context.Context, d *driver) (string, error)
}

func faultKinds() []fault {
	return []fault{
		{"PostgreSQL stopped and restarted mid-run", pgRestart},
		{"429s with Retry-After", knobWindow("rate limit", func(k *apisim.Knobs) { k.RateLimitEvery, k.RetryAfter = 3, 2*time.Second })},
		{"5xx responses", knobWindow("faults", func(k *apisim.Knobs) { k.FaultRate = 0.3 })},
		{"truncated bodies", knobWindow("truncation", func(k *apisim.Knobs) { k.TruncateRate = 0.3 })},
		{"slow responses", knobWindow("latency", func(k *apisim.Knobs) { k.Latency = 250 * time.Millisecond })},
		{"access tokens expired", tokenExpiry},
		{"a second worker started and stopped", secondWorker},
		{"an inline sync racing the worker", inlineSync},
	}
}

var killFault = fault{"kill -9 of the worker", kill9}

// kill9 waits until the worker is probably mid-run, then kills it; the next
// worker must resume.
func kill9(ctx context.Context, d *driver) (string, error) {
	// Most kills land mid-run: wait for a running run, then a little more.
	var running int64
	deadline := time.Now().Add(time.Duration(1000+d.rng.IntN(4000)) * time.Millisecond)
	for running == 0 && time.Now().Before(deadline) {
		_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM "chaos".sync_runs WHERE status = 'running'`).Scan(&running)
		pause(ctx, 20*time.Millisecond)
	}
	pause(ctx, time.Duration(d.rng.IntN(300))*time.Millisecond)
	d.primary.kill()
	p, err := d.startWorker()
	d.primary = p
	note := "between runs"
	if running > 0 {
		note = "mid-run"
	}
	return note, err
}

func pgRestart(ctx context.Context, d *driver) (string, error) {
	pause(ctx, time.Duration(300+d.rng.IntN(1500))*time.Millisecond)
	mode := []string{"fast", "immediate"}[d.rng.IntN(2)]
	if _, err := d.postgres(ctx, "down", "PG_STOP_MODE="+mode); err != nil {
		return "", err
	}
	pause(ctx, time.Duration(500+d.rng.IntN(2000))*time.Millisecond)
	url, err := d.postgres(ctx, "up")
	if err != nil {
		return "", err
	}
	if url != d.pgURL {
		return "", fmt.Errorf("the cluster came back on another URL (%s)", url)
	}
	note := "stopped (" + mode + ")"
	if !d.primary.alive() {
		// A worker may give up on a lost database; a supervisor restarts it.
		p, err := d.startWorker()
		d.primary = p
		note += "; worker exited and was restarted"
		return note, err
	}
	return note, nil
}

func knobWindow(what string, set func(*apisim.Knobs)) func(context.Context, *driver) (string, error) {
	return func(ctx context.Context, d *driver) (string, error) {
		if err := d.sim.UpdateKnobs(set); err != nil {
			return "", err
		}
		window := time.Duration(2000+d.rng.IntN(3000)) * time.Millisecond
		pause(ctx, window)
		return fmt.Sprintf("%s for %s", what, window.Round(100*time.Millisecond)), nil
	}
}

func tokenExpiry(ctx context.Context, d *driver) (string, error) {
	n := 2 + d.rng.IntN(3)
	for range n {
		pause(ctx, time.Duration(500+d.rng.IntN(1000))*time.Millisecond)
		d.sim.ExpireTokens()
	}
	return fmt.Sprintf("expired %d times", n), nil
}

func secondWorker(ctx context.Context, d *driver) (string, error) {
	p, err := d.startWorker()
	if err != nil {
		return "", err
	}
	pause(ctx, time.Duration(2000+d.rng.IntN(3000))*time.Millisecond)
	return "ran alongside", p.stop(15 * time.Second)
}

func inlineSync(ctx context.Context, d *driver) (string, error) {
	args := []string{"sync"}
	if d.rng.IntN(3) == 0 {
		args = append(args, "--full")
	}
	out, err := d.usersync(ctx, args...)
	switch {
	case err == nil:
		return strings.Join(args, " ") + " completed", nil
	case strings.Contains(string(out), "another sync"):
		return strings.Join(args, " ") + " found the worker running and stepped aside", nil
	}
	return "", fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, lastLine(out))
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

// The crash test runs a Write in a child process (this test binary,
// re-executed with the variables below set) and kills it with SIGKILL while
// it is in the middle of a file.
const (
	crashEnvDir    = "USERSYNC_SNAPSHOT_TEST_CRASH_DIR"
	crashEnvSchema = "USERSYNC_SNAPSHOT_TEST_CRASH_SCHEMA"
	crashEnvTime   = "USERSYNC_SNAPSHOT_TEST_CRASH_TIME"
	crashBlocked   = "BLOCKED"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnvDir); dir != "" {
		os.Exit(crashChild(dir))
	}
	goleak.VerifyTestMain(m)
}

// crashChild writes a snapshot until it is halfway through the first
// users_current file, says so on stdout, and waits to be killed.
func crashChild(dir string) int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		return 2
	}
	at, err := time.Parse(time.RFC3339, os.Getenv(crashEnvTime))
	if err != nil {
		return fail(err)
	}
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return fail(err)
	}
	local, err := NewLocal(dir)
	if err != nil {
		return fail(err)
	}
	dest := &hookDestination{Destination: local, wrap: func(_ context.Context, name string, o Object) Object {
		if _, rel, _ := strings.Cut(name, "/"); strings.HasPrefix(rel, "users_current/") { // rel: within the deployment's folder
			return &blockingObject{Object: o}
		}
		return o
	}}
	w, err := New(pool, os.Getenv(crashEnvSchema), dest, nil, func() time.Time { return at }, Options{FileRows: 100})
	if err != nil {
		return fail(err)
	}
	_, err = w.Write(ctx)
	return fail(fmt.Errorf("Write returned instead of blocking: %w", err))
}

// blockingObject writes half of its first write, reports it and blocks.
type blockingObject struct{ Object }

func (o *blockingObject) Write(p []byte) (int, error) {
	if _, err := o.Object.Write(p[:len(p)/2]); err != nil {
		return 0, err
	}
	fmt.Println(crashBlocked)
	<-time.After(10 * time.Minute) // killed long before; a timer so the runtime sees no deadlock
	return 0, errors.New("not killed")
}

func TestCrashMidSnapshot(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 300)
	local, dir := newLocal(t)
	dest := &hookDestination{Destination: local}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	w, err := New(pool, name, dest, testLogger(t), clock.now, Options{FileRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}

	clock.next()
	runCrashChild(t, dir, name, clock.t)

	// Readers still see the first snapshot, whole.
	leftovers := slices.DeleteFunc(files(t, dir), func(f string) bool { return slices.Contains(manifestFiles(first), f) })
	temp := slices.ContainsFunc(leftovers, func(f string) bool { return strings.Contains(f, "/.part-") && strings.Contains(f, tempMarker) })
	committed := slices.ContainsFunc(leftovers, func(f string) bool { return strings.HasPrefix(f, name+"/users/20261122T101600Z/part-") })
	if !temp || !committed || slices.ContainsFunc(leftovers, func(f string) bool { return strings.HasPrefix(f, name+"/"+manifestDir) }) {
		t.Fatalf("after the crash, want a temporary file, committed parts and no new manifest; leftovers: %q", leftovers)
	}
	assertLatest(t, dest, first)

	// The next Write succeeds once PostgreSQL has noticed the dead session
	// (which held the lock), and removes the leftovers.
	clock.next()
	third := writeWhenFree(t, w)
	assertOnly(t, dest, dir, first, third)
}

// runCrashChild starts the child, waits until it is blocked mid-file and
// kills it.
func runCrashChild(t *testing.T, dir, schemaName string, at time.Time) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvSchema+"="+schemaName, crashEnvTime+"="+at.Format(time.RFC3339))
	cmd.Stderr = testWriter{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				t.Fatal("the child exited before blocking")
			}
			if line == crashBlocked {
				break wait
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the child did not block within 2 minutes")
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	go func() {
		for range lines { // drain until the pipe closes
		}
	}()
	_ = cmd.Wait() // "signal: killed"
}

// writeWhenFree retries Write while the lock is still held by a killed
// process's session, polling with a deadline.
func writeWhenFree(t *testing.T, w *Writer) Manifest {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		m, err := w.Write(context.Background())
		if !errors.Is(err, ErrBusy) {
			if err != nil {
				t.Fatalf("Write after the crash: %v", err)
			}
			return m
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the killed writer's lock was not released within 30s")
		}
	}
}

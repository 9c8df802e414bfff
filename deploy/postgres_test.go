package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pgCluster is a copy of deploy/dev/postgres.sh in a folder of its own, as
// in another worktree: its cluster is that folder's.
type pgCluster struct {
	t      *testing.T
	script string
	first  int      // PG_PORT_FIRST
	env    []string // added to the environment
}

// newPGCluster copies the script into a new folder and wipes the cluster
// at the end of the test.
func newPGCluster(t *testing.T, script []byte, first int) *pgCluster {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy", "dev")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &pgCluster{t: t, script: filepath.Join(dir, "postgres.sh"), first: first}
	if err := os.WriteFile(c.script, script, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := c.run("wipe"); err != nil {
			t.Errorf("postgres.sh wipe: %v\n%s", err, out)
		}
	})
	return c
}

// run runs the script with verb; it returns stdout, or stderr with the error.
func (c *pgCluster) run(verb string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", c.script, verb)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "USERSYNC_DEV_PG_NAME=") &&
			!strings.HasPrefix(kv, "PG_PORT_FIRST=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PG_PORT_FIRST="+strconv.Itoa(c.first))
	cmd.Env = append(cmd.Env, c.env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return strings.Join(lines[max(0, len(lines)-8):], "\n"), err
	}
	return strings.TrimSpace(stdout.String()), nil
}

// forget removes the port the cluster was last started on, so that its
// next start probes PG_PORT_FIRST as a new cluster does.
func (c *pgCluster) forget() {
	c.t.Helper()
	state := filepath.Join(filepath.Dir(c.script), "..", "..", ".dev", "postgres", "last_port")
	if err := os.Remove(state); err != nil {
		c.t.Fatal(err)
	}
}

// upAtOnce runs `up` of every cluster at the same moment and returns the
// URLs printed.
func upAtOnce(t *testing.T, clusters []*pgCluster) []string {
	t.Helper()
	urls := make([]string, len(clusters))
	errs := make([]error, len(clusters))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range clusters {
		wg.Go(func() {
			<-start
			out, err := c.run("up")
			if err != nil {
				errs[i] = fmt.Errorf("%w\n%s", err, out)
				return
			}
			urls[i] = out
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("cluster %d: postgres.sh up: %v", i, err)
		}
	}
	return urls
}

// checkServing checks that each URL is served by its own server, which
// answers a query on the URL's port.
func checkServing(t *testing.T, urls []string) {
	t.Helper()
	seen := map[string]bool{}
	for i, u := range urls {
		if u == "" {
			continue // its up failed, reported
		}
		if !strings.HasPrefix(u, "postgres://") || seen[u] {
			t.Errorf("cluster %d: URL %q (URLs %q)", i, u, urls)
			continue
		}
		seen[u] = true
		out, err := exec.Command("psql", u, "-Atc", "SHOW port").CombinedOutput()
		if err != nil || !strings.Contains(u, ":"+strings.TrimSpace(string(out))+"/") {
			t.Errorf("cluster %d: psql %s: %v: %s", i, u, err, out)
		}
	}
}

// TestPostgresClustersStartAtOnce: deploy/dev/postgres.sh clusters of
// three folders (three worktrees) started at the same moment all come up,
// each on its own port: new ones (initdb included), and again after a stop
// with no port remembered, when every start probes the same first port at
// once, with the lock and without it (the retry alone). Two `up` of one
// cluster at once both print its URL.
func TestPostgresClustersStartAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three PostgreSQL clusters: make ci-long runs it")
	}
	if bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(bins) == 0 && os.Getenv("PG_BINDIR") == "" {
		if _, err := exec.LookPath("initdb"); err != nil {
			t.Skip("no PostgreSQL server binaries (postgres.sh would install them)")
		}
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql is not on PATH")
	}
	script, err := os.ReadFile(filepath.Join(root, "deploy", "dev", "postgres.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Away from the ports of the clusters of make test (55432 on).
	first := 57000 + os.Getpid()%3000
	var clusters []*pgCluster
	for range 3 {
		clusters = append(clusters, newPGCluster(t, script, first))
	}
	checkServing(t, upAtOnce(t, clusters))
	for _, c := range clusters {
		if out, err := c.run("down"); err != nil {
			t.Fatalf("postgres.sh down: %v\n%s", err, out)
		}
		c.forget()
	}
	checkServing(t, upAtOnce(t, clusters))

	// Without the lock (a flock that locks nothing), as when another
	// program takes the port between the check and the start: the starts
	// that find their port taken try the next one.
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "flock"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		if out, err := c.run("down"); err != nil {
			t.Fatalf("postgres.sh down: %v\n%s", err, out)
		}
		c.forget()
		c.env = []string{"PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH")}
	}
	checkServing(t, upAtOnce(t, clusters))

	// The same cluster twice at once: one starts it, the other waits and
	// reuses it.
	clusters[0].env = nil
	if out, err := clusters[0].run("down"); err != nil {
		t.Fatalf("postgres.sh down: %v\n%s", err, out)
	}
	twice := upAtOnce(t, []*pgCluster{clusters[0], clusters[0]})
	if twice[0] != twice[1] || twice[0] == "" {
		t.Errorf("two ups of one cluster printed %q", twice)
	}
	checkServing(t, twice[:1])
}

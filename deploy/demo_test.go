package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// TestDemo runs `make demo`'s script end to end, as a user would (20,000
// users), on the test database: every step must succeed, every example query must return
// rows (the as-of query over the membership history came out empty once, with
// nothing failing), and the OAuth client secret must not be printed.
func TestDemo(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a long run: make ci-long runs it")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatalf("the demo queries with psql, which is not on PATH: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "usersync")
	build := exec.Command("go", "build", "-o", bin, "./cmd/usersync")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	demo := exec.Command("bash", "deploy/dev/demo.sh")
	demo.Dir = root
	demo.Env = append(os.Environ(), "USERSYNC_BIN="+bin, "DATABASE_URL="+schematest.DatabaseURL(t),
		"DEMO_SNAPSHOTS="+filepath.Join(dir, "snapshots"))
	b, err := demo.CombinedOutput()
	out := string(b)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	if strings.Contains(out, "demo-client-secret") {
		t.Error("the demo printed the OAuth client secret")
	}
	queries := regexp.MustCompile(`(?s)== (query \d+)[^\n]*\n.*?\((\d+) rows?\)`).FindAllStringSubmatch(out, -1)
	if len(queries) != 4 {
		t.Fatalf("found %d example queries with a row count, want 4:\n%s", len(queries), out)
	}
	for _, q := range queries {
		if n, _ := strconv.Atoi(q[2]); n == 0 {
			t.Errorf("%s returned no rows:\n%s", q[1], out)
		}
	}
	if !strings.Contains(out, "written to "+filepath.Join(dir, "snapshots")) {
		t.Errorf("no snapshot written:\n%s", out)
	}
	// The DuckDB paths printed (the snapshot's, the demo's) name files:
	// <dir>/<USERSYNC_SCHEMA>/<table>/<id>/.
	globs := regexp.MustCompile(`read_parquet\('([^']+)'\)`).FindAllStringSubmatch(out, -1)
	if len(globs) < 2 {
		t.Errorf("want DuckDB hints from the snapshot and the demo:\n%s", out)
	}
	for _, g := range globs {
		if files, err := filepath.Glob(g[1]); err != nil || len(files) == 0 {
			t.Errorf("the DuckDB hint read_parquet('%s') names no file (%v)", g[1], err)
		}
		// One snapshot's folder: a glob over the snapshot folders reads
		// every snapshot kept, which the README warns against.
		if strings.Contains(filepath.Dir(g[1]), "*") {
			t.Errorf("the DuckDB hint read_parquet('%s') reads every snapshot kept, not one", g[1])
		}
	}
}

// TestDemoSaysItCompiles: with no binary yet, make demo and make demo-worker
// say that they compile first and how long the first build takes, before it
// starts (the first build took 3 m 42 s without a word). GO=false
// fails the build at once, so nothing else runs.
func TestDemoSaysItCompiles(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not on PATH: %v", err)
	}
	for _, target := range []string{"demo", "demo-worker"} {
		bin := filepath.Join(t.TempDir(), "usersync")
		cmd := exec.Command("make", "--no-print-directory", target, "BIN="+bin, "GO=false")
		cmd.Dir = root
		// Not the flags and variables of a make test above this one.
		cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=")
		b, err := cmd.CombinedOutput()
		out := string(b)
		if err == nil {
			t.Fatalf("make %s with GO=false succeeded:\n%s", target, out)
		}
		note, build := strings.Index(out, "the first build compiles"), strings.Index(out, "false build")
		if note < 0 || build < 0 || note > build || !regexp.MustCompile(`\d+ to \d+ minutes`).MatchString(out[:build]) {
			t.Errorf("make %s does not say, before building, that the first build takes minutes:\n%s", target, out)
		}
	}
}

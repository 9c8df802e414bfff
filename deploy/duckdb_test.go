package deploy_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The DuckDB of the tests is the bench's: the npm package pinned in
// bench/duckdb/package-lock.json (the DuckDB analysts run, a current one),
// installed there by npm ci on first use, and run by node with
// bench/duckdb/query.mjs.
const duckDBPackage = "@duckdb/node-api"

type duckDB struct{ dir string }

// newDuckDB makes sure bench/duckdb/node_modules holds the pinned DuckDB
// package (npm ci when it is missing or another version).
func newDuckDB(t *testing.T) duckDB {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the analysts' DuckDB examples run on node, and %s is not on PATH (make test installs nodejs and npm): %v", tool, err)
		}
	}
	dir, err := filepath.Abs(filepath.Join(root, "bench", "duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	want := packageVersion(t, filepath.Join(dir, "package-lock.json"), "node_modules/"+duckDBPackage)
	installed := filepath.Join(dir, "node_modules", duckDBPackage, "package.json")
	if _, err := os.Stat(installed); err == nil && packageVersion(t, installed, "") == want {
		return duckDB{dir: dir}
	}
	t.Logf("installing %s %s into bench/duckdb/node_modules (npm ci)", duckDBPackage, want)
	npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("installing DuckDB with npm ci in bench/duckdb: %v\n%s", err, out)
	}
	if have := packageVersion(t, installed, ""); have != want {
		t.Fatalf("npm ci installed %s %s, want %s", duckDBPackage, have, want)
	}
	return duckDB{dir: dir}
}

// packageVersion reads a version from package.json (key "") or from
// package-lock.json's packages (key: the package's path).
func packageVersion(t *testing.T, file, key string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version  string `json:"version"`
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("decoding %s: %v", file, err)
	}
	if key != "" {
		return doc.Packages[key].Version
	}
	return doc.Version
}

// duckResult is what query.mjs prints for one statement.
type duckResult struct {
	Rows  int         `json:"rows"`
	First [][]*string `json:"first"`
	Error string      `json:"error"`
}

// run runs stmts in one DuckDB session started in the folder cwd.
func (d duckDB) run(t *testing.T, cwd string, stmts []string) []duckResult {
	t.Helper()
	in, err := json.Marshal(stmts)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(d.dir, "query.mjs"), "-keep", "200")
	cmd.Dir = cwd
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node query.mjs: %v\n%s", err, stderr.String())
	}
	var results []duckResult
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r duckResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("decoding query.mjs's output %q: %v", sc.Text(), err)
		}
		results = append(results, r)
	}
	if len(results) != len(stmts) {
		t.Fatalf("query.mjs answered %d of %d statements:\n%s", len(results), len(stmts), stderr.String())
	}
	return results
}

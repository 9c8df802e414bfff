package cli

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
)

// TestREADMEQueries runs every SQL example of README.md against a synced
// warehouse, so the analysts' examples cannot rot.
func TestREADMEQueries(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no sql blocks")
	}
	c := newCLIEnv(t, apisim.Options{Seed: 21, Users: 300})
	if code, _, errs := run(t, c.env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	c.sim.UpdateUsers(10)
	if code, _, errs := run(t, c.env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	ctx := context.Background()
	n := 0
	for _, blk := range blocks {
		for _, stmt := range strings.Split(blk[1], ";") {
			if strings.TrimSpace(stripComments(stmt)) == "" {
				continue
			}
			n++
			err := pgx.BeginFunc(ctx, c.store.Pool(), func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SET LOCAL search_path = "`+c.store.Schema()+`"`); err != nil {
					return err
				}
				rows, err := tx.Query(ctx, stmt)
				if err != nil {
					return err
				}
				rows.Close()
				return rows.Err()
			})
			if err != nil {
				t.Errorf("README query failed: %v\n%s", err, stmt)
			}
		}
	}
	if n < 5 {
		t.Errorf("ran only %d README queries", n)
	}
}

func stripComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestGuaranteesCiteRealTests checks that every test docs/guarantees.md
// names exists in the repository.
func TestGuaranteesCiteRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/guarantees.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	err = filepath.WalkDir("../../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".dev" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)(\\*?)`").FindAllStringSubmatch(string(doc), -1)
	if len(names) < 10 {
		t.Fatalf("docs/guarantees.md names only %d tests", len(names))
	}
	for _, m := range names {
		pattern := "func " + m[1] + "("
		if m[2] == "*" {
			pattern = "func " + m[1]
		}
		if !strings.Contains(sources.String(), pattern) {
			t.Errorf("docs/guarantees.md cites %s%s, which no test defines", m[1], m[2])
		}
	}
}

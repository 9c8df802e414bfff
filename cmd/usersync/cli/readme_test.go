package cli

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
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

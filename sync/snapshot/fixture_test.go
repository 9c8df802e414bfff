package snapshot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// newWarehouse returns a pool and a freshly migrated schema, dropped when
// the test ends.
func newWarehouse(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	pool := schematest.NewPool(t, 6)
	name := schematest.NewSchemaName(t, pool)
	if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	markSynced(t, pool, name)
	return pool, name
}

// markSynced records a succeeded full sync, as the first sync leaves, unless
// one is recorded: a snapshot is written only of a warehouse a completed sync
// left (checkSettled). Its counters are 0, so readChanges does not count it.
func markSynced(t testing.TB, pool *pgxpool.Pool, schemaName string) {
	t.Helper()
	q := pgx.Identifier{schemaName, "sync_runs"}.Sanitize()
	if _, err := pool.Exec(context.Background(), `INSERT INTO `+q+` (kind, status, finished_at)
		SELECT 'full', 'succeeded', now() WHERE NOT EXISTS (SELECT 1 FROM `+q+` WHERE status = 'succeeded' AND kind = 'full')`); err != nil {
		t.Fatalf("recording a completed sync: %v", err)
	}
}

// fixtureWatermark is the users watermark fill stores.
var fixtureWatermark = time.Date(2026, 11, 22, 10, 15, 0, 123456000, time.UTC)

// Edge cases cycled through by every column of a type; nil is replaced by
// the next value in NOT NULL columns.
var (
	edgeInts  = []any{nil, int64(0), int64(-1), int64(1), int64(math.MaxInt64), int64(math.MinInt64), int64(1234567890123)}
	edgeBools = []any{nil, true, false}
	edgeTexts = []any{nil, "", "plain ascii", "李小龙 Ünïcødé Ελληνικά 🎉👩‍👩‍👧",
		"quotes \" ' \\ <b>&amp;</b>\nnew line\ttab\r\n", strings.Repeat("é", 255), strings.Repeat("x", 1024),
		strings.Repeat("🎉", 1024)}
	edgeTimes = []any{nil,
		time.Date(2019, 7, 15, 13, 57, 29, 189212000, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1901, 12, 13, 20, 45, 52, 1000, time.UTC),
		time.Date(2262, 4, 11, 23, 47, 16, 854776000, time.UTC), // past time.Time's nanosecond range in int64
		time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.FixedZone("x", 5*3600+1800)),
	}
	edgeJSON = []any{nil, `{}`, `null`, `[]`, `{"a": [1, 2, {"b": "李"}], "e": "🎉", "n": null}`, `"just a string"`,
		`123.456`, `{"big": 12345678901234567890, "esc": "\u0001\n\"\u00e9", "deep": {"x": {"y": [true, false]}}}`}
	edgeBytes = []any{nil, []byte{}, []byte{0, 1, 2, 0xff, 0}, sha(1)}
	edgeLists = []any{nil, []int64{}, []int64{1}, []*int64{ptr(int64(5)), nil, ptr(int64(math.MaxInt64))},
		[]int64{math.MinInt64, 0, -1, 1234567890123}}
)

func ptr[T any](v T) *T { return &v }

func sha(i int) []byte {
	h := sha256.Sum256([]byte(fmt.Sprint(i)))
	return h[:]
}

// edgeValue returns the row-th edge case of column c, shifted per column so
// that the cases combine differently across columns.
func edgeValue(c schema.Column, row int) any {
	h := fnv.New32a()
	h.Write([]byte(c.Name))
	k := row + int(h.Sum32()%97)
	var vals []any
	switch c.Type {
	case "bigint":
		vals = edgeInts
	case "boolean":
		vals = edgeBools
	case "text":
		vals = edgeTexts
	case "timestamptz":
		vals = edgeTimes
	case "jsonb":
		vals = edgeJSON
	case "bytea":
		vals = edgeBytes
	case "bigint[]":
		vals = edgeLists
	default:
		panic("no edge values for " + c.Type)
	}
	v := vals[k%len(vals)]
	if v == nil && !c.Nullable {
		v = vals[(k+1)%len(vals)]
	}
	return v
}

// fill loads every snapshot table of the warehouse with edge cases: users
// users (every tenth deleted), their versions, teams (one deleted, one
// without a name), roles, profiles, memberships and relationships, and the
// users watermark.
func fill(t testing.TB, pool *pgxpool.Pool, schemaName string, users int) {
	t.Helper()
	ctx := context.Background()
	overrides := map[string]func(row int) map[string]any{
		"roles": func(i int) map[string]any {
			return map[string]any{"id": int64(i + 1), "parent_role_id": map[bool]any{true: nil, false: int64(1)}[i == 0]}
		},
		"profiles": func(i int) map[string]any { return map[string]any{"id": int64(i + 1)} },
		"teams": func(i int) map[string]any {
			m := map[string]any{"id": int64(i + 1), "name": fmt.Sprintf("team %c", 'a'+i), "deleted_at": nil}
			switch i {
			case 3:
				m["deleted_at"] = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
			case 4:
				m["name"] = nil // a NULL element in users_current.team_names
			}
			return m
		},
		"users": func(i int) map[string]any {
			m := map[string]any{"id": int64(i + 1), "role_id": refOrNil(i, 3), "profile_id": refOrNil(i+1, 3), "deleted_at": nil,
				"other_relationships": nil}
			if i%10 == 9 {
				m["deleted_at"] = time.Date(2026, 5, 6, 7, 8, 9, 10000, time.UTC)
			}
			if u := i + 1; u%5 == 0 {
				m["mailbox_ids"] = []int64{int64(u * 10)}
				m["content_category_ids"] = []int64{7}
				m["other_relationships"] = fmt.Sprintf(`{"owners": [{"type": "user", "id": "%d"}, {"type": "team", "id": "3"}]}`, u-1)
			}
			return m
		},
		// Superseded versions: the current ones are the users rows.
		"user_version_history": func(i int) map[string]any {
			m := map[string]any{"user_id": int64(i/2 + 1), "valid_to": time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)}
			if i%2 == 0 {
				m["valid_to"] = time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
			}
			return m
		},
	}
	counts := map[string]int{"roles": 3, "profiles": 3, "teams": 5, "users": users, "user_version_history": 2 * min(users, 50)}
	for _, table := range []string{"roles", "profiles", "teams", "users", "user_version_history"} {
		tbl, _ := schema.TableNamed(table)
		var cols []string
		for _, c := range tbl.Columns {
			if c.Name != "version_id" { // an identity (history), or a sequence's default (users)
				cols = append(cols, c.Name)
			}
		}
		rows := make([][]any, counts[table])
		for i := range rows {
			o := overrides[table](i)
			for _, c := range tbl.Columns {
				if c.Name == "version_id" {
					continue
				}
				v, ok := o[c.Name]
				if !ok {
					v = edgeValue(c, i)
				}
				rows[i] = append(rows[i], v)
			}
		}
		copyRows(ctx, t, pool, schemaName, table, cols, rows)
	}
	var teams [][]any
	synced := time.Date(2026, 11, 22, 9, 0, 0, 1000, time.UTC)
	for u := 1; u <= users; u++ {
		for team := 1; team <= 5; team++ {
			if (u+team)%3 == 0 {
				teams = append(teams, []any{int64(u), int64(team), synced})
			}
		}
	}
	copyRows(ctx, t, pool, schemaName, "user_teams", []string{"user_id", "team_id", "synced_at"}, teams)
	if _, err := pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{schemaName, "sync_state"}.Sanitize()+
		` (stream, watermark) VALUES ('users', $1)`, fixtureWatermark); err != nil {
		t.Fatalf("setting the watermark: %v", err)
	}
}

// refOrNil returns NULL, an id in 1..n, or a dangling id.
func refOrNil(i, n int) any {
	switch k := i % (n + 2); k {
	case 0:
		return nil
	case n + 1:
		return int64(999)
	default:
		return int64(k)
	}
}

func copyRows(ctx context.Context, t testing.TB, pool *pgxpool.Pool, schemaName, table string, cols []string, rows [][]any) {
	t.Helper()
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{schemaName, table}, cols, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("filling %s: %v", table, err)
	}
}

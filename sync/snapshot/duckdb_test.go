//go:build duckdb

// DuckDB reading the snapshots, as analysts do. It needs cgo and builds
// DuckDB from go-duckdb's bundled library (slow the first time); make test
// runs it:
//
//	go test -tags duckdb -run TestDuckDB ./sync/snapshot/

package snapshot

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/marcboeker/go-duckdb"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
)

// parquetList is a DuckDB list literal of a table's files.
func parquetList(dir string, tm TableManifest) string {
	var quoted []string
	for _, f := range tm.Files {
		quoted = append(quoted, "'"+strings.ReplaceAll(filepath.Join(dir, f.Path), "'", "''")+"'")
	}
	return "read_parquet([" + strings.Join(quoted, ", ") + "])"
}

func TestDuckDBReadsSnapshots(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 300)
	dest, dir := newLocal(t)
	// Several files per table, to read them as one.
	w, err := New(pool, name, dest, testLogger(t), nil, Options{FileRows: 128, RowGroupRows: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	tables := map[string]string{}
	for _, tm := range m.Tables {
		tables[tm.Name] = parquetList(dir, tm)
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+tables[tm.Name]).Scan(&n); err != nil {
			t.Fatalf("%s: %v", tm.Name, err)
		}
		if n != tm.Rows {
			t.Errorf("DuckDB counts %d rows in %s, the manifest %d", n, tm.Name, tm.Rows)
		}
		tbl := tableByName(t, tm.Name)
		rows, err := db.QueryContext(ctx, "DESCRIBE SELECT * FROM "+tables[tm.Name])
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for rows.Next() {
			var col, typ string
			var null, key, def, extra sql.NullString
			if err := rows.Scan(&col, &typ, &null, &key, &def, &extra); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"bigint": "BIGINT", "boolean": "BOOLEAN", "text": "VARCHAR", "jsonb": "JSON",
				"timestamptz": "TIMESTAMP WITH TIME ZONE", "bytea": "BLOB", "bigint[]": "BIGINT[]", "text[]": "VARCHAR[]"}[tbl.Columns[i].Type]
			if col != tbl.Columns[i].Name || typ != want {
				t.Errorf("%s column %d: DuckDB sees %s %s, want %s %s", tm.Name, i, col, typ, tbl.Columns[i].Name, want)
			}
			i++
		}
		rows.Close()
		if i != len(tbl.Columns) {
			t.Errorf("DuckDB sees %d columns in %s, want %d", i, tm.Name, len(tbl.Columns))
		}
		checkDuckDBJSON(ctx, t, db, pool, name, tbl, tables[tm.Name])
	}

	// A join of users and their teams, and values, as PostgreSQL has them.
	const join = `SELECT count(*), count(DISTINCT u.id), sum(ut.team_id), max(u.created_at), min(u.updated_at)
		FROM %s u JOIN %s ut ON ut.user_id = u.id WHERE u.deleted_at IS NULL`
	q := strings.Replace(strings.Replace(join, "%s", pgx.Identifier{name, "users"}.Sanitize(), 1), "%s", pgx.Identifier{name, "user_teams"}.Sanitize(), 1)
	var count, users, sum int64
	var maxCreated, minUpdated sql.NullTime
	if err := pool.QueryRow(ctx, q).Scan(&count, &users, &sum, &maxCreated, &minUpdated); err != nil {
		t.Fatal(err)
	}
	var dCount, dUsers, dSum int64
	var dMax, dMin sql.NullTime
	if err := db.QueryRowContext(ctx, strings.Replace(strings.Replace(join, "%s", tables["users"], 1), "%s", tables["user_teams"], 1)).
		Scan(&dCount, &dUsers, &dSum, &dMax, &dMin); err != nil {
		t.Fatal(err)
	}
	if dCount != count || dUsers != users || dSum != sum || !dMax.Time.Equal(maxCreated.Time) || !dMin.Time.Equal(minUpdated.Time) {
		t.Errorf("join in DuckDB: %d rows, %d users, sum %d, max %v, min %v; PostgreSQL: %d, %d, %d, %v, %v",
			dCount, dUsers, dSum, dMax.Time, dMin.Time, count, users, sum, maxCreated.Time, minUpdated.Time)
	}

	// The lists of users_current, NULL elements (team 5 has no name) included.
	var dNulls, dIDs, pgNulls, pgIDs sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE name IS NULL), count(*) FROM
		(SELECT unnest(team_names) AS name FROM `+tables["users_current"]+`)`).Scan(&dNulls, &dIDs); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE tn IS NULL), count(*) FROM `+
		pgx.Identifier{name, "users_current"}.Sanitize()+`, unnest(team_names) AS tn`).Scan(&pgNulls, &pgIDs); err != nil {
		t.Fatal(err)
	}
	if dNulls != pgNulls || dIDs != pgIDs || pgNulls.Int64 == 0 {
		t.Errorf("users_current team names: DuckDB %d NULL of %d, PostgreSQL %d of %d", dNulls.Int64, dIDs.Int64, pgNulls.Int64, pgIDs.Int64)
	}
}

// checkDuckDBJSON checks that DuckDB types every jsonb column of tbl JSON
// (Parquet's JSON logical type), so its JSON functions apply without a cast,
// and finds as many JSON objects in it as PostgreSQL.
func checkDuckDBJSON(ctx context.Context, t *testing.T, db *sql.DB, pool *pgxpool.Pool, name string, tbl schema.Table, from string) {
	t.Helper()
	for _, c := range tbl.Columns {
		if c.Type != "jsonb" {
			continue
		}
		col := pgx.Identifier{c.Name}.Sanitize()
		var typ string
		var objects, pgObjects int64
		// typeof of the aggregate is the column's type, rows or not.
		q := "SELECT typeof(any_value(" + col + ")), count(*) FILTER (WHERE json_type(" + col + ") = 'OBJECT') FROM " + from
		if err := db.QueryRowContext(ctx, q).Scan(&typ, &objects); err != nil {
			t.Fatalf("%s.%s: %v", tbl.Name, c.Name, err)
		}
		q = "SELECT count(*) FILTER (WHERE jsonb_typeof(" + col + ") = 'object') FROM " + pgx.Identifier{name, tbl.Name}.Sanitize()
		if err := pool.QueryRow(ctx, q).Scan(&pgObjects); err != nil {
			t.Fatalf("%s.%s: %v", tbl.Name, c.Name, err)
		}
		if typ != "JSON" || objects != pgObjects {
			t.Errorf("DuckDB: typeof(%s.%s) is %q with %d objects, want JSON with %d as in PostgreSQL", tbl.Name, c.Name, typ, objects, pgObjects)
		}
	}
}

// analystsNewest is docs/analysts.md's block that makes views of the newest
// complete snapshot: its statements up to the first count.
func analystsNewest(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "analysts.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```sql\n-- DuckDB: deployment usersync's newest complete snapshot, each table a view named after it\n")
	block, _, _ = strings.Cut(block, "\nSELECT count(*)")
	if !ok || !strings.Contains(block, "CREATE OR REPLACE VIEW users AS") {
		t.Fatal("docs/analysts.md: the newest snapshot's views are not where this test looks")
	}
	var stmts []string
	for _, s := range strings.Split(block, ";\n") {
		if strings.TrimSpace(s) != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// TestDuckDBAnalystsNewestQuery: docs/analysts.md's views of the newest
// snapshot, made in a snapshot folder that two deployments share, read the
// newest of the deployment it names, not the other's newer one.
func TestDuckDBAnalystsNewestQuery(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	a := writeSnapshots(t, dir, at, 2, Options{})
	writeSnapshots(t, dir, at.Add(time.Hour), 1, Options{})
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one session: the variable
	if _, err := db.ExecContext(ctx, "SET file_search_path = '"+dir+"'"); err != nil {
		t.Fatal(err)
	}
	for _, q := range analystsNewest(t) {
		q = strings.ReplaceAll(q, "usersync", a[1].Schema)
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	var n int64
	var id string
	if err := db.QueryRowContext(ctx, "SELECT count(*), getvariable('snapshot') FROM users").Scan(&n, &id); err != nil {
		t.Fatal(err)
	}
	users, _ := a[1].Table("users")
	if id != a[1].ID || n != users.Rows {
		t.Errorf("the views read %d users of snapshot %s; want %d of %s", n, id, users.Rows, a[1].ID)
	}
}

// duckCount returns the rows of from and the snapshot ids its files carry.
func duckCount(ctx context.Context, t *testing.T, db *sql.DB, glob string) (rows int64, ids string) {
	t.Helper()
	q := "'" + strings.ReplaceAll(glob, "'", "''") + "'"
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet("+q+")").Scan(&rows); err != nil {
		t.Fatalf("%s: %v", glob, err)
	}
	err := db.QueryRowContext(ctx, "SELECT string_agg(DISTINCT decode(value), ',') FROM parquet_kv_metadata("+q+
		") WHERE decode(key) = '"+MetaSnapshotID+"'").Scan(&ids)
	if err != nil {
		t.Fatalf("%s: %v", glob, err)
	}
	return rows, ids
}

// TestDuckDBStablePaths: DuckDB reads each table's newest complete snapshot
// at <table>/current/*.parquet, and a view made over that path once keeps
// answering, with the newer snapshot's rows, after a new snapshot and the
// retention (keep 1) that removes the one it first read. On S3 (the double;
// this DuckDB has no httpfs) the stable keys, fetched through the
// destination, are read the same way.
func TestDuckDBStablePaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 40)
	local, dir := newLocal(t)
	fake := newFakeS3(t, "snapshots")
	s3, err := ParseDestination("s3://snapshots/p", S3Options{Endpoint: fake.URL, Region: "us-east-1",
		AccessKeyID: "AKIDTEST", SecretAccessKey: "secret", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := &stepClock{t: time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)}
	var writers []*Writer
	for _, d := range []Destination{local, s3} {
		w, err := New(pool, name, d, testLogger(t), clock.now, Options{Keep: 1, FileRows: 16})
		if err != nil {
			t.Fatal(err)
		}
		writers = append(writers, w)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users := filepath.Join(dir, name, "users", currentName, "*.parquet")
	if _, err := db.ExecContext(ctx, "CREATE VIEW users AS FROM read_parquet('"+users+"')"); err == nil {
		t.Fatal("a view over a stable path that does not exist yet was made")
	}
	for round := range 2 {
		var ms []Manifest
		for _, w := range writers {
			m, err := w.Write(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		if round == 0 {
			if _, err := db.ExecContext(ctx, "CREATE VIEW users AS FROM read_parquet('"+users+"')"); err != nil {
				t.Fatal(err)
			}
		}
		s3dir := fetchCurrent(t, s3, ms[1])
		for i, root := range []string{dir, s3dir} {
			for _, tm := range ms[i].Tables {
				rows, ids := duckCount(ctx, t, db, filepath.Join(root, name, tm.Name, currentName, "*.parquet"))
				if rows != tm.Rows || ids != ms[i].ID {
					t.Errorf("round %d, %s %s: DuckDB reads %d rows of snapshot %q at the stable path, want %d of %s",
						round, []string{"local", "S3"}[i], tm.Name, rows, ids, tm.Rows, ms[i].ID)
				}
			}
		}
		want, _ := ms[0].Table("users")
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&n); err != nil || n != want.Rows {
			t.Errorf("round %d: the view counts %d users (%v), want %d", round, n, err, want.Rows)
		}
		// More users for the next round, so its snapshot differs.
		if _, err := pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{name, "users"}.Sanitize()+` WHERE id % 3 = 0`); err != nil {
			t.Fatal(err)
		}
		clock.next()
	}
	if ids, err := Manifests(ctx, local, name); err != nil || len(ids) != 1 {
		t.Errorf("manifests %q, %v: retention kept more than one", ids, err)
	}
}

// fetchCurrent copies the objects under each table's current/ on dest into
// a local folder laid out the same way.
func fetchCurrent(t *testing.T, dest Destination, m Manifest) string {
	t.Helper()
	out := t.TempDir()
	for _, tm := range m.Tables {
		entries, err := dest.List(context.Background(), m.Schema+"/"+tm.Name+"/"+currentName+"/")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(out, filepath.FromSlash(e.Name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, readAll(t, dest, e.Name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

package warehouse_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/internal/warehousetest"
	"github.com/usersync/usersync/sync/warehouse/pii"
)

// TestMigratedColumnsMatchCatalog holds every table and view of the migrated
// schema against schema.Tables(): same tables, same columns in the same order,
// same types and nullability, and a comment on each.
func TestMigratedColumnsMatchCatalog(t *testing.T) {
	t.Parallel()
	pool, name := warehousetest.Migrated(t, "")
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
		SELECT c.table_name, c.column_name,
		       CASE WHEN c.data_type = 'ARRAY' THEN substr(c.udt_name, 2) || '[]'
		            WHEN c.data_type = 'timestamp with time zone' THEN 'timestamptz'
		            ELSE c.data_type END,
		       c.is_nullable = 'YES',
		       col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position)
		FROM information_schema.columns c
		WHERE c.table_schema = $1 AND c.table_name <> 'schema_migrations'
		ORDER BY c.table_name, c.ordinal_position`, name)
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		table, name, typ string
		nullable         bool
		comment          *string
	}
	got := map[string][]col{}
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.name, &c.typ, &c.nullable, &c.comment); err != nil {
			t.Fatal(err)
		}
		got[c.table] = append(got[c.table], c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	pgType := map[string]string{"bigint": "bigint", "boolean": "boolean", "text": "text", "timestamptz": "timestamptz",
		"jsonb": "jsonb", "bytea": "bytea", "int8[]": "bigint[]", "text[]": "text[]"}
	tables := schema.Tables()
	if len(got) != len(tables) {
		t.Errorf("database has %d tables, catalog %d", len(got), len(tables))
	}
	for _, tb := range tables {
		cols := got[tb.Name]
		if len(cols) != len(tb.Columns) {
			t.Errorf("%s: %d columns in the database, %d in the catalog", tb.Name, len(cols), len(tb.Columns))
			continue
		}
		for i, want := range tb.Columns {
			c := cols[i]
			typ := c.typ
			if m, ok := pgType[typ]; ok {
				typ = m
			}
			if c.name != want.Name || typ != want.Type || c.nullable != want.Nullable {
				t.Errorf("%s column %d: database %s %s null=%v, catalog %s %s null=%v",
					tb.Name, i+1, c.name, typ, c.nullable, want.Name, want.Type, want.Nullable)
			}
			if c.comment == nil || *c.comment != want.Meaning {
				t.Errorf("%s.%s: comment %v, want %q", tb.Name, c.name, c.comment, want.Meaning)
			}
		}
	}
	// The user table carries one typed column per catalog attribute.
	userCols := map[string]string{}
	for _, c := range got["users"] {
		userCols[c.name] = c.typ
	}
	for _, a := range schema.User().Attributes {
		if typ, ok := userCols[a.Column()]; !ok || typ != a.Type.PostgresType() {
			t.Errorf("users.%s is %q, want %s for attribute %s", a.Column(), typ, a.Type.PostgresType(), a.Name)
		}
	}
	var tableComments int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r','v') AND obj_description(c.oid) IS NULL`, name).Scan(&tableComments)
	if err != nil || tableComments != 0 {
		t.Errorf("%d tables without a comment (err %v)", tableComments, err)
	}
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	pool, name := warehousetest.Migrated(t, "")
	res, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name})
	if err != nil {
		t.Fatal(err)
	}
	applied, latest, err := warehouse.MigrationStatus(context.Background(), pool, name)
	if len(res.Applied) != 0 || res.Current != latest {
		t.Errorf("second migrate: %+v", res)
	}
	if err != nil || applied != latest {
		t.Errorf("MigrationStatus = %d, %d, %v", applied, latest, err)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 16)
	name := schematest.NewSchemaName(t, pool)
	ctx := context.Background()
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	applied := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
				res, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name})
				applied[i] = len(res.Applied)
				return err
			})
		}()
	}
	wg.Wait()
	total := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("migrator %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	ms, _ := schema.Migrations(name)
	if total != len(ms) {
		t.Errorf("%d migrations applied across %d concurrent migrators, want each once (%d)", total, n, len(ms))
	}
}

func TestMigrationStatusOfMissingSchema(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 2)
	applied, latest, err := warehouse.MigrationStatus(context.Background(), pool, "t_never_created")
	if err != nil || applied != 0 || latest < 1 {
		t.Errorf("MigrationStatus = %d, %d, %v", applied, latest, err)
	}
}

// TestReaderRole checks the analysts' role: it can read users_current and the
// other warehouse tables, and cannot read oauth_tokens.
func TestReaderRole(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 4)
	role := schematest.NewSchemaName(t, pool) + "_reader"
	t.Cleanup(func() {
		ctx := context.Background()
		// Schemas are dropped by NewSchemaName's cleanup, which runs after this one.
		_, _ = pool.Exec(ctx, `DROP OWNED BY "`+role+`"`)
		_, _ = pool.Exec(ctx, `DROP ROLE IF EXISTS "`+role+`"`)
	})
	_, name := migratedWithPool(t, pool, role)
	ctx := context.Background()
	asReader := func(sql string) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE "`+role+`"`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, sql)
			return err
		})
	}
	for _, tb := range []string{"users_current", "users", "teams", "user_versions", "sync_runs", "quarantine"} {
		if err := asReader(fmt.Sprintf(`SELECT * FROM %q.%q LIMIT 1`, name, tb)); err != nil {
			t.Errorf("reader cannot read %s: %v", tb, err)
		}
	}
	err := asReader(fmt.Sprintf(`SELECT * FROM %q.oauth_tokens`, name))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("reader reading oauth_tokens: err = %v, want permission denied", err)
	}
	err = asReader(fmt.Sprintf(`SELECT * FROM %q.river_job`, name+"_river"))
	if err == nil {
		t.Error("reader can read River's tables")
	}
	if err := asReader(fmt.Sprintf(`INSERT INTO %q.teams (id, raw) VALUES (1, '{}')`, name)); err == nil {
		t.Error("reader can write")
	}
}

func migratedWithPool(t *testing.T, pool *pgxpool.Pool, role string) (*pgxpool.Pool, string) {
	t.Helper()
	name := schematest.NewSchemaName(t, pool)
	res, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name, ReaderRole: role})
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	if len(res.Notices) != 0 {
		t.Fatalf("notices: %v", res.Notices)
	}
	return pool, name
}

// TestReaderRoleNotice checks that a migrating user who may not create roles
// gets a clear notice instead of a failure.
func TestReaderRoleNotice(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	owner := name + "_owner"
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE ROLE "`+owner+`" LOGIN NOCREATEROLE`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`)
		_, _ = pool.Exec(context.Background(), `DROP OWNED BY "`+owner+`"`)
		_, _ = pool.Exec(context.Background(), `DROP ROLE IF EXISTS "`+owner+`"`)
	})
	var db string
	if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `GRANT CREATE ON DATABASE "`+db+`" TO "`+owner+`"`); err != nil {
		t.Fatal(err)
	}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.User = owner
	ownerPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ownerPool.Close()
	res, err := warehouse.Migrate(ctx, ownerPool, warehouse.MigrateOptions{Schema: name, ReaderRole: name + "_nobody"})
	if err != nil {
		t.Fatalf("migrate as a user who may not create roles: %v", err)
	}
	if len(res.Notices) != 1 || !strings.Contains(res.Notices[0], "may not create roles") {
		t.Errorf("notices = %v", res.Notices)
	}
	_, _ = pool.Exec(ctx, `REVOKE CREATE ON DATABASE "`+db+`" FROM "`+owner+`"`)
}

// TestMigrationLeanUsersKeepsData migrates a warehouse holding version 2's
// shapes (user_versions and user_relationships as tables) to the newest: the
// views that replace them return exactly the rows the tables held, the
// current versions move into the users rows, and new versions keep taking
// ids from the same sequence. (And 0004 drops user_teams rows of users the
// warehouse does not hold.)
func TestMigrationLeanUsersKeepsData(t *testing.T) {
	t.Parallel()
	pool, name, s := atVersion(t, 2,
		`INSERT INTO {{schema}}.users (id, title, raw, content_hash) VALUES (1, 'now', '{}', '\x01'), (2, 'b', '{}', '\x02'), (3, 'c', '{}', '\x03')`,
		`INSERT INTO {{schema}}.user_versions (user_id, content_hash, title, raw, valid_from, valid_to, run_id) VALUES
			(1, '\x00', 'before', '{}', '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', 7),
			(1, '\x01', 'now', '{}', '2026-02-01T00:00:00Z', NULL, 8),
			(2, '\x02', 'b', '{}', '2026-03-01T00:00:00Z', NULL, NULL)`,
		`INSERT INTO {{schema}}.user_relationships (user_id, relationship, related_type, related_id) VALUES
			(1, 'mailboxes', 'mailbox', 11), (1, 'mailboxes', 'mailbox', 10), (1, 'mailboxes', 'prospect', 12),
			(1, 'jobRole', 'jobRole', 4), (2, 'recipients', 'recipient', 7)`,
		// Team rows a membership pass wrote for user 9, which users lacks.
		`INSERT INTO {{schema}}.user_teams (user_id, team_id) VALUES (1, 5), (2, 5), (9, 5), (9, 6)`)
	ctx := context.Background()
	migrations, err := schema.Migrations(name)
	if err != nil {
		t.Fatal(err)
	}
	// Content hashes are not compared: 0008 hashes every row again (see
	// TestContentHashIsOfTheStoredRow).
	versions := `SELECT string_agg(concat_ws('/', version_id, user_id, title, valid_from, valid_to, run_id), ' ' ORDER BY version_id) FROM ` + s + `.user_versions WHERE user_id <> 3`
	links := `SELECT string_agg(concat_ws('/', user_id, relationship, related_type, related_id), ' ' ORDER BY user_id, relationship, related_type, related_id) FROM ` + s + `.user_relationships`
	read := func(q string) string {
		t.Helper()
		var out string
		if err := pool.QueryRow(ctx, q).Scan(&out); err != nil {
			t.Fatalf("reading %q: %v", q, err)
		}
		return out
	}
	wantVersions, wantLinks := read(versions), read(links)
	res, err := warehouse.Migrate(ctx, pool, warehouse.MigrateOptions{Schema: name})
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	if len(res.Applied) != len(migrations)-2 {
		t.Errorf("applied %v", res.Applied)
	}
	if got := read(versions); got != wantVersions {
		t.Errorf("user_versions after migrating:\n got %s\nwant %s", got, wantVersions)
	}
	if got := read(links); got != wantLinks {
		t.Errorf("user_relationships after migrating:\n got %s\nwant %s", got, wantLinks)
	}
	if got := read(`SELECT concat_ws(' ', mailbox_ids, recipient_ids, other_relationships) FROM ` + s + `.users WHERE id = 1`); got != `{10,11} {"jobRole": [{"id": 4, "type": "jobRole"}], "mailboxes": [{"id": 12, "type": "prospect"}]}` {
		t.Errorf("user 1's linkage columns: %s", got)
	}
	if got := read(`SELECT string_agg(user_id || '/' || team_id, ' ' ORDER BY user_id, team_id) FROM ` + s + `.user_teams`); got != "1/5 2/5" {
		t.Errorf("user_teams after migrating: %s, want the rows of users in users (1/5 2/5)", got)
	}
	if got := read(`SELECT count(*)::text FROM ` + s + `.user_version_history`); got != "1" {
		t.Errorf("user_version_history holds %s rows, want the 1 superseded version", got)
	}
	// User 3 had no open version: it starts one; a new user gets the next id.
	if _, err := pool.Exec(ctx, `INSERT INTO `+s+`.users (id, raw, content_hash) VALUES (4, '{}', '\x04')`); err != nil {
		t.Fatal(err)
	}
	if got := read(`SELECT string_agg(user_id::text, ' ' ORDER BY version_id) FROM ` + s + `.user_versions`); got != "1 1 2 3 4" {
		t.Errorf("versions by id: %s, want 1 1 2 3 4", got)
	}
}

// TestReaderRoleIsMigrator: a reader role that is the migrating user, or a
// role it belongs to, is refused before anything is granted or revoked (the
// revokes would take the migrating user's own access to oauth_tokens and
// schema_migrations and lock the next migrate out); a role of its own works.
func TestReaderRoleIsMigrator(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 4)
	name := schematest.NewSchemaName(t, pool)
	owner, group, reader := name+"_owner", name+"_group", name+"_reader"
	ctx := context.Background()
	var db string
	if err := pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE ROLE "` + owner + `" LOGIN NOCREATEROLE`, `CREATE ROLE "` + group + `" NOLOGIN`,
		`CREATE ROLE "` + reader + `" NOLOGIN`, `GRANT "` + group + `" TO "` + owner + `"`,
		`GRANT CREATE ON DATABASE "` + db + `" TO "` + owner + `"`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`)
		_, _ = pool.Exec(ctx, `REVOKE CREATE ON DATABASE "`+db+`" FROM "`+owner+`"`)
		for _, r := range []string{owner, group, reader} {
			_, _ = pool.Exec(ctx, `DROP OWNED BY "`+r+`"`)
			_, _ = pool.Exec(ctx, `DROP ROLE IF EXISTS "`+r+`"`)
		}
	})
	cfg := pool.Config().Copy()
	cfg.ConnConfig.User = owner
	ownerPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ownerPool.Close()
	migrate := func(role string) (warehouse.MigrateResult, error) {
		return warehouse.Migrate(ctx, ownerPool, warehouse.MigrateOptions{Schema: name, ReaderRole: role})
	}
	for _, role := range []string{owner, group} {
		if _, err := migrate(role); !errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
			t.Errorf("reader role %s: err = %v, want ErrReaderRoleIsMigrator", role, err)
		}
	}
	// Still migratable, and the owner still reads its own tables.
	if _, err := migrate(""); err != nil {
		t.Fatalf("migrating after a refused reader role: %v", err)
	}
	for _, tb := range []string{"oauth_tokens", "schema_migrations", "users"} {
		if _, err := ownerPool.Exec(ctx, fmt.Sprintf(`SELECT * FROM %q.%q LIMIT 1`, name, tb)); err != nil {
			t.Errorf("the owner cannot read %s: %v", tb, err)
		}
	}
	res, err := migrate(reader)
	if err != nil || len(res.Notices) != 0 {
		t.Fatalf("a reader role of its own: %v, notices %v", err, res.Notices)
	}
	if _, err := migrate(reader); err != nil {
		t.Errorf("migrating again: %v", err)
	}
}

// TestCommentColumnsWritesOnlyWhatDiffers: a new warehouse's column comments
// are already those of no policy, so noting that policy rewrites none of
// them (each COMMENT is a catalog write); a policy that drops a column
// rewrites that column's comments only, and going back restores them.
func TestCommentColumnsWritesOnlyWhatDiffers(t *testing.T) {
	t.Parallel()
	pool, name := warehousetest.Migrated(t, "")
	ctx := context.Background()
	store, err := warehouse.NewStore(pool, name)
	if err != nil {
		t.Fatal(err)
	}
	// The transaction ids of the comment rows of users' and
	// user_version_history's columns, by column: a rewritten comment gets a
	// new one.
	written := func() map[string]string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT c.relname || '.' || a.attname, d.xmin::text FROM pg_description d
			JOIN pg_class c ON c.oid = d.objoid JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid
			WHERE d.classoid = 'pg_class'::regclass AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)
			AND c.relname IN ('users', 'user_version_history')`, name)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		var col, xmin string
		if _, err := pgx.ForEachRow(rows, []any{&col, &xmin}, func() error { out[col] = xmin; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	note := func(cfg *normalize.PolicyConfig) {
		t.Helper()
		var p *normalize.Policy
		if cfg != nil {
			if p, err = normalize.NewPolicy(schema.User(), *cfg); err != nil {
				t.Fatal(err)
			}
		}
		pd, err := pii.New(store, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pd.NotePolicy(ctx); err != nil {
			t.Fatal(err)
		}
	}
	changed := func(before, after map[string]string) []string {
		var out []string
		for col, x := range after {
			if before[col] != x {
				out = append(out, col)
			}
		}
		slices.Sort(out)
		return out
	}
	fresh := written()
	if len(fresh) < 2*len(schema.User().Attributes) {
		t.Fatalf("%d column comments on a new warehouse, want one per attribute in both tables", len(fresh))
	}
	note(nil)
	if c := changed(fresh, written()); len(c) > 0 {
		t.Errorf("noting no policy on a new warehouse rewrote %d comments: %v", len(c), c)
	}
	before := written()
	note(&normalize.PolicyConfig{Drop: []string{"phoneNumber"}})
	want := []string{"user_version_history.phone_number", "users.phone_number"}
	if c := changed(before, written()); !slices.Equal(c, want) {
		t.Errorf("a policy dropping phoneNumber rewrote %v, want %v", c, want)
	}
	before = written()
	note(nil)
	if c := changed(before, written()); !slices.Equal(c, want) {
		t.Errorf("going back to no policy rewrote %v, want %v", c, want)
	}
	var comment string
	if err := pool.QueryRow(ctx, `SELECT col_description(($1 || '.users')::regclass, attnum) FROM pg_attribute
		WHERE attrelid = ($1 || '.users')::regclass AND attname = 'phone_number'`, schema.QuoteIdentifier(name)).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(comment, "personal-data policy") || comment == "" {
		t.Errorf("users.phone_number's comment after going back to no policy: %q", comment)
	}
}

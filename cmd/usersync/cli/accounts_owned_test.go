package cli

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// setSchema edits account name's row by hand to name schema s.
func (f *registryFleet) setSchema(t *testing.T, name, s string) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), `UPDATE "`+f.env["USERSYNC_SCHEMA"]+`_river".accounts
		SET settings = jsonb_set(settings, '{USERSYNC_SCHEMA}', to_jsonb($1::text)) WHERE name = $2`, s, name); err != nil {
		t.Fatal(err)
	}
}

// dropSchemasAfter drops the schemas a test made without schematest.
func dropSchemasAfter(t *testing.T, f *registryFleet, schemas ...string) {
	t.Cleanup(func() {
		for _, s := range schemas {
			_, _ = f.pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`)
		}
	})
}

// TestDropDataRefusesWhatIsNotTheAccounts: remove --drop-data refuses, in
// one line naming the schema and exit 2, a row edited by hand to name
// another fleet's account schema, another deployment's default schema, the
// fleet's default, River and union schemas, or a schema without the
// marker, and changes nothing; a schema made by an earlier release is
// marked by migrate, and then dropped.
func TestDropDataRefusesWhatIsNotTheAccounts(t *testing.T) {
	t.Parallel()
	f, g := newRegistryFleet(t), newRegistryFleet(t)
	_, url := f.simulator(t, 9, 20)
	tok := f.secretFile(t, "tok", "owned-secret-0123456789")
	euSchema, otherEU := schematest.NewSchemaName(t, f.pool), schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", url, "--schema", euSchema, "--api-token-file", tok)
	g.mustRun(t, "accounts", "add", "eu", "--api-url", url, "--schema", otherEU, "--api-token-file", tok)
	bare := schematest.NewSchemaName(t, f.pool)
	if _, err := f.pool.Exec(context.Background(), `CREATE SCHEMA "`+bare+`"; CREATE TABLE "`+bare+`".users (id bigint)`); err != nil {
		t.Fatal(err)
	}
	d := f.env["USERSYNC_SCHEMA"]
	for _, tc := range []struct{ schema, why string }{
		{otherEU, "is marked as account eu of fleet " + g.env["USERSYNC_SCHEMA"] + "_river"},
		{g.env["USERSYNC_SCHEMA"], "has a job queue beside it"},
		{d, "is the fleet's default schema"},
		{d + "_river", "is the fleet's job queue"},
		{d + "_all", "is the fleet's union views'"},
		{bare, "has no usersync marker"},
	} {
		f.setSchema(t, "eu", tc.schema)
		before := f.state(t, euSchema, otherEU, bare, g.env["USERSYNC_SCHEMA"], g.env["USERSYNC_SCHEMA"]+"_river")
		gBefore := g.state(t, otherEU)
		code, out, errs := run(t, f.env, "accounts", "remove", "eu", "--drop-data", "--yes")
		if code != ExitUsage || !strings.Contains(errs, "schema "+tc.schema+" "+tc.why) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("--drop-data of a row naming %s: exit %d, %q %q; want 2 and one line saying it %s", tc.schema, code, out, errs, tc.why)
		}
		if after := f.state(t, euSchema, otherEU, bare, g.env["USERSYNC_SCHEMA"], g.env["USERSYNC_SCHEMA"]+"_river"); after != before || g.state(t, otherEU) != gBefore {
			t.Errorf("the refused --drop-data of %s changed the registries or the schemas:\n%s\n->\n%s", tc.schema, before, after)
		}
		if n := f.count(t, `SELECT count(*) FROM "`+g.env["USERSYNC_SCHEMA"]+`".schema_migrations`); n == 0 {
			t.Errorf("the other deployment's tables went")
		}
	}

	// An earlier release's account: no marker until migrate writes it.
	f.setSchema(t, "eu", euSchema)
	if _, err := f.pool.Exec(context.Background(), `DROP TABLE "`+euSchema+`".usersync_owner`); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, f.env, "accounts", "remove", "eu", "--drop-data", "--yes"); code != ExitUsage || !strings.Contains(errs, "no usersync marker") {
		t.Errorf("--drop-data of an unmarked schema: exit %d, %s", code, errs)
	}
	if out := f.mustRun(t, "migrate"); !strings.Contains(out, "account eu: schema "+euSchema+" marked as this account's") {
		t.Errorf("migrate does not mark the earlier release's schema:\n%s", out)
	}
	f.mustRun(t, "accounts", "remove", "eu", "--drop-data", "--yes")
	if n := f.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+euSchema+`'`); n != 0 {
		t.Error("the marked schema was not dropped")
	}
}

// TestDropDataDependentViews: a view outside the account's schema over its
// tables (and a view over that one) refuses --drop-data, named, with nothing
// changed; --cascade drops them, saying so one by one, and nothing else
// outside the schema.
func TestDropDataDependentViews(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	_, url := f.simulator(t, 9, 20)
	euSchema, analytics := schematest.NewSchemaName(t, f.pool), schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", url, "--schema", euSchema, "--api-token-file", f.secretFile(t, "tok", "dep-secret-0123456789"))
	if _, err := f.pool.Exec(context.Background(), `CREATE SCHEMA "`+analytics+`";
		CREATE VIEW "`+analytics+`".eu_users AS SELECT id FROM "`+euSchema+`".users;
		CREATE VIEW "`+analytics+`".eu_count AS SELECT count(*) FROM "`+analytics+`".eu_users;
		CREATE TABLE "`+analytics+`".keep (id int)`); err != nil {
		t.Fatal(err)
	}
	before := f.state(t, euSchema, analytics)
	code, _, errs := run(t, f.env, "accounts", "remove", "eu", "--drop-data", "--yes")
	if code != ExitUsage || !strings.Contains(errs, "view "+analytics+".eu_users") || !strings.Contains(errs, "view "+analytics+".eu_count") || !strings.Contains(errs, "--cascade") {
		t.Errorf("--drop-data with dependent views: exit %d, %s", code, errs)
	}
	if after := f.state(t, euSchema, analytics); after != before {
		t.Errorf("the refused --drop-data changed the registry or the schemas:\n%s\n->\n%s", before, after)
	}
	if n := f.count(t, `SELECT count(*) FROM pg_views WHERE schemaname = '`+analytics+`'`); n != 2 {
		t.Errorf("%d views left in %s, want 2", n, analytics)
	}
	out := f.mustRun(t, "accounts", "remove", "eu", "--drop-data", "--yes", "--cascade")
	first, second := strings.Index(out, "dropped view "+analytics+".eu_count"), strings.Index(out, "dropped view "+analytics+".eu_users")
	if first < 0 || second < first || !strings.Contains(out, "schema "+euSchema+" dropped") {
		t.Errorf("--drop-data --cascade: %s", out)
	}
	if n := f.count(t, `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '`+analytics+`'`); n != 1 {
		t.Errorf("%d objects left in %s, want its table alone", n, analytics)
	}
	if n := f.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+euSchema+`'`); n != 0 {
		t.Error("the account's schema is still there")
	}
}

// TestFleetsShareASnapshotFolder: two fleets writing to one snapshot folder,
// each with an account beta, get schemas named after their fleet, and keep
// each other's snapshots through retention and --drop-data.
func TestFleetsShareASnapshotFolder(t *testing.T) {
	t.Parallel()
	f, g := newRegistryFleet(t), newRegistryFleet(t)
	g.env["USERSYNC_SNAPSHOT_DIR"] = f.env["USERSYNC_SNAPSHOT_DIR"]
	_, url := f.simulator(t, 9, 30)
	tok := f.secretFile(t, "tok", "shared-secret-0123456789")
	fBeta, gBeta := f.env["USERSYNC_SCHEMA"]+"_beta", g.env["USERSYNC_SCHEMA"]+"_beta"
	dropSchemasAfter(t, f, fBeta, gBeta)
	for _, x := range []*registryFleet{f, g} {
		s := x.env["USERSYNC_SCHEMA"] + "_beta"
		if out := x.mustRun(t, "accounts", "add", "beta", "--api-url", url, "--api-token-file", tok, "--snapshot-keep", "1", "--snapshot-keep-for", "0"); !strings.Contains(out, "schema "+s) {
			t.Fatalf("accounts add beta: %s; want schema %s", out, s)
		}
		x.mustRun(t, "sync", "--account", "beta", "--full")
		x.mustRun(t, "snapshot", "--account", "beta")
	}
	root := f.env["USERSYNC_SNAPSHOT_DIR"]
	gFiles := files(t, filepath.Join(root, gBeta))
	if gFiles == 0 {
		t.Fatal("fleet g wrote no snapshot")
	}
	for range 3 {
		f.mustRun(t, "snapshot", "--account", "beta")
	}
	if n := files(t, filepath.Join(root, gBeta)); n != gFiles {
		t.Errorf("fleet f's retention changed fleet g's beta folder: %d files, was %d", n, gFiles)
	}
	f.mustRun(t, "accounts", "remove", "beta", "--drop-data", "--yes")
	if n := files(t, filepath.Join(root, gBeta)); n != gFiles {
		t.Errorf("fleet f's --drop-data changed fleet g's beta folder: %d files, was %d", n, gFiles)
	}
	if n := files(t, filepath.Join(root, fBeta)); n != 0 {
		t.Errorf("fleet f's beta folder kept %d files", n)
	}
	if n := g.count(t, `SELECT count(*) FROM "`+gBeta+`".users`); n != 30 {
		t.Errorf("fleet g's beta users: %d, want 30", n)
	}
}

// files counts the files under dir (0 when it does not exist).
func files(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

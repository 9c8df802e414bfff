package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/jobs/fleet/registry"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// registryFleet is a default account (newCLIEnv) and the means to add accounts,
// each served by a simulator of its own.
type registryFleet struct {
	*cliEnv
	pool *pgxpool.Pool
	dir  string
}

func newRegistryFleet(t *testing.T) *registryFleet {
	t.Helper()
	c := newCLIEnv(t, apisim.Options{Seed: 3, Users: 120})
	f := &registryFleet{cliEnv: c, pool: schematest.NewPool(t, 4), dir: t.TempDir()}
	c.env["USERSYNC_SNAPSHOT_DIR"] = filepath.Join(f.dir, "snapshots")
	c.env["USERSYNC_SECRETS_KEY"] = testSecretsKey
	union := c.env["USERSYNC_SCHEMA"] + "_all"
	t.Cleanup(func() { _, _ = f.pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+union+`" CASCADE`) })
	return f
}

// simulator starts a simulated API of its own for an account.
func (f *registryFleet) simulator(t *testing.T, seed int64, users int) (*apisim.Server, string) {
	t.Helper()
	sim := apisim.New(apisim.Options{Seed: seed, Users: users})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

// secretFile writes a secret to a file of its own.
func (f *registryFleet) secretFile(t *testing.T, name, secret string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// state is the registry and which of the schemas exist, to compare before
// and after a refused command (other tests make and drop schemas of their
// own meanwhile).
func (f *registryFleet) state(t *testing.T, schemas ...string) string {
	t.Helper()
	var reg, exist string
	river := f.env["USERSYNC_SCHEMA"] + "_river"
	if err := f.pool.QueryRow(context.Background(), `SELECT coalesce(jsonb_agg(to_jsonb(a) ORDER BY name)::text, '[]')
		FROM "`+river+`".accounts a`).Scan(&reg); err != nil {
		t.Fatal(err)
	}
	d := f.env["USERSYNC_SCHEMA"]
	schemas = append(schemas, d, d+"_river", d+"_all", "usersync_us")
	if err := f.pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(nspname, ',' ORDER BY nspname), '')
		FROM pg_namespace WHERE nspname = ANY($1)`, schemas).Scan(&exist); err != nil {
		t.Fatal(err)
	}
	return reg + "\n" + exist
}

func (f *registryFleet) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := run(t, f.env, args...)
	if code != ExitOK {
		t.Fatalf("usersync %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

func (f *registryFleet) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestAccountsLifecycle: an account is added with its secret from a file,
// listed and shown without the secret, synced with --account into its own
// schema only, seen in the fleet's status and the union views, paused,
// resumed, given a backfill job that names it, and removed, its data kept.
func TestAccountsLifecycle(t *testing.T) {
	t.Parallel()
	f := newRegistryFleet(t)
	euSim, euURL := f.simulator(t, 5, 80)
	euSchema := schematest.NewSchemaName(t, f.pool)
	const secret = "eu-secret-token-0123456789"
	out := f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", euSchema,
		"--api-token-file", f.secretFile(t, "eu.token", secret), "--page-size", "25")
	if !strings.Contains(out, "account eu added: schema "+euSchema) {
		t.Errorf("accounts add: %s", out)
	}
	var printed []string
	for _, args := range [][]string{{"accounts", "list"}, {"accounts", "list", "--json"}, {"accounts", "show", "eu"}, {"accounts", "show", "eu", "--json"}} {
		printed = append(printed, f.mustRun(t, args...))
	}
	if !strings.Contains(printed[0], euSchema) || !strings.Contains(printed[2], "USERSYNC_API_TOKEN") || !strings.Contains(printed[2], "25") {
		t.Errorf("list and show:\n%s\n%s", printed[0], printed[2])
	}
	var list struct {
		Version  int `json:"version"`
		Accounts []struct {
			Name, Schema string
		} `json:"accounts"`
	}
	if err := json.Unmarshal([]byte(printed[1]), &list); err != nil || list.Version != 1 || len(list.Accounts) != 1 || list.Accounts[0].Name != "eu" {
		t.Errorf("accounts list --json: %v\n%s", err, printed[1])
	}
	if !strings.HasPrefix(printed[3], "{\n  \"version\": 1,") || !strings.Contains(printed[3], `"value": "set"`) {
		t.Errorf("accounts show --json:\n%s", printed[3])
	}

	f.mustRun(t, "sync", "--account", "eu", "--full")
	euStore, err := warehouse.NewStore(f.pool, euSchema)
	if err != nil {
		t.Fatal(err)
	}
	syncertest.AssertMirrors(t, euSim, euStore)
	if n := f.count(t, `SELECT count(*) FROM "`+f.env["USERSYNC_SCHEMA"]+`".users`); n != 0 {
		t.Errorf("the eu sync wrote %d users into the default account's schema", n)
	}
	f.mustRun(t, "sync", "--full")
	syncertest.AssertMirrors(t, f.sim, f.store)
	union := `"` + f.env["USERSYNC_SCHEMA"] + `_all".users`
	if d, e := f.count(t, `SELECT count(*) FROM `+union+` WHERE account = 'default'`), f.count(t, `SELECT count(*) FROM `+union+` WHERE account = 'eu'`); d != 120 || e != 80 {
		t.Errorf("union view: %d default and %d eu users, want 120 and 80", d, e)
	}

	checkAllAccountsDBT(t, f)

	f.mustRun(t, "accounts", "pause", "eu")
	status := f.mustRun(t, "status")
	if !strings.Contains(status, "accounts     2 (the default and 1 registered)") || !regexp.MustCompile(`(?m)^  eu +paused `).MatchString(status) {
		t.Errorf("fleet status lacks the paused account:\n%s", status)
	}
	f.mustRun(t, "accounts", "resume", "eu")
	var st struct {
		Schema   string `json:"schema"`
		Accounts []registry.Status
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, "status", "--json")), &st); err != nil || len(st.Accounts) != 2 ||
		st.Accounts[1].Name != "eu" || st.Accounts[1].Paused || st.Accounts[1].LastSuccess == nil || st.Accounts[1].LagSeconds == nil {
		t.Errorf("status --json accounts: %+v %v", st.Accounts, err)
	}
	st.Accounts = nil
	if err := json.Unmarshal([]byte(f.mustRun(t, "status", "--account", "eu", "--json")), &st); err != nil || st.Schema != euSchema || st.Accounts != nil {
		t.Errorf("status --account eu --json: schema %s, accounts %+v, %v", st.Schema, st.Accounts, err)
	}

	_, checked, _ := run(t, f.env, "check", "--account", "eu")
	if want := "schemas " + euSchema + " and " + f.env["USERSYNC_SCHEMA"] + "_river are current"; !strings.Contains(checked, want) {
		t.Errorf("check --account eu lacks %q:\n%s", want, checked)
	}
	f.mustRun(t, "backfill", "--account", "eu")
	var jobsOut struct {
		Jobs []struct {
			Args map[string]any `json:"args"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, "jobs", "list", "--account", "eu", "--json")), &jobsOut); err != nil ||
		len(jobsOut.Jobs) != 1 || jobsOut.Jobs[0].Args["account"] != "eu" {
		t.Errorf("jobs list --account eu: %+v %v", jobsOut, err)
	}
	if out := f.mustRun(t, "jobs", "list", "--account", "default"); !strings.Contains(out, "no jobs") {
		t.Errorf("jobs list --account default lists eu's job:\n%s", out)
	}
	for _, o := range append(printed, status) {
		if strings.Contains(o, secret) {
			t.Errorf("a secret was printed:\n%s", o)
		}
	}

	f.mustRun(t, "accounts", "remove", "eu")
	if n := f.count(t, `SELECT count(*) FROM "`+euSchema+`".users`); n != 80 {
		t.Errorf("remove kept %d of the account's 80 users", n)
	}
	if n := f.count(t, `SELECT count(*) FROM pg_namespace WHERE nspname = '`+f.env["USERSYNC_SCHEMA"]+`_all'`); n != 0 {
		t.Errorf("the union views outlived the last account")
	}
	if code, _, errs := run(t, f.env, "status", "--account", "eu"); code != ExitUsage || !strings.Contains(errs, "no such account") {
		t.Errorf("status --account of a removed account: %d %s", code, errs)
	}
}

// checkAllAccountsDBT holds schema --format dbt --all-accounts to the union
// views: every view, with its columns in order, the account first.
func checkAllAccountsDBT(t *testing.T, f *registryFleet) {
	t.Helper()
	var file dbtFile
	if err := yaml.Unmarshal([]byte(f.mustRun(t, "schema", "--format", "dbt", "--all-accounts")), &file); err != nil || len(file.Sources) != 1 {
		t.Fatalf("dbt --all-accounts: %v", err)
	}
	src := file.Sources[0]
	union := f.env["USERSYNC_SCHEMA"] + "_all"
	if src.Schema != union || f.count(t, `SELECT count(*) FROM information_schema.views WHERE table_schema = '`+union+`'`) != len(src.Tables) {
		t.Errorf("dbt --all-accounts: source %s with %d tables", src.Schema, len(src.Tables))
	}
	for _, tbl := range src.Tables {
		var cols []string
		for _, c := range tbl.Columns {
			cols = append(cols, c.Name)
		}
		var got string
		if err := f.pool.QueryRow(context.Background(), `SELECT string_agg(column_name, ',' ORDER BY ordinal_position)
			FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, union, tbl.Name).Scan(&got); err != nil || got != strings.Join(cols, ",") {
			t.Errorf("dbt --all-accounts: %s has columns %s, the view %s (%v)", tbl.Name, strings.Join(cols, ","), got, err)
		}
	}
}

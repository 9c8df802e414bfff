package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
)

// environ is env in os.Environ's form.
func environ(env map[string]string) []string {
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	return kv
}

// run calls Main in-process with the given environment.
func run(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, environ(env), &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpListsCommandsAndSettings: usersync help lists the commands and
// points to usersync help settings, which describes every setting.
func TestHelpListsCommandsAndSettings(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "help")
	if code != ExitOK {
		t.Fatalf("help exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("help does not list %s", c.name)
		}
	}
	if !strings.Contains(out, "usersync help settings") {
		t.Errorf("help does not point to usersync help settings:\n%s", out)
	}
	code, out, _ = run(t, nil, "help", "settings")
	if code != ExitOK {
		t.Fatalf("help settings: exit %d", code)
	}
	for _, s := range config.Settings() {
		if !strings.Contains(out, s.Env) || s.Flag != "" && !strings.Contains(out, "--"+s.Flag) {
			t.Errorf("help settings does not describe %s", s.Env)
		}
	}
	if code, _, _ := run(t, nil); code != ExitUsage {
		t.Errorf("no arguments: exit %d, want %d", code, ExitUsage)
	}
}

// TestCommandHelp: a command's -h (and usersync help <command>) says what it
// does, lists its own flags and no setting, and points to the settings.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	flags := CommandFlags()
	for _, c := range commands() {
		code, out, _ := run(t, nil, c.name, "-h")
		if code != ExitOK || !strings.Contains(out, "usersync "+c.name) || !strings.Contains(out, "usersync help settings") {
			t.Errorf("%s -h: exit %d, output %q", c.name, code, out)
		}
		if strings.Contains(out, "USERSYNC_OAUTH_CLIENT_SECRET") || strings.Contains(out, "--snapshot-row-group-rows") {
			t.Errorf("%s -h lists the settings:\n%s", c.name, out)
		}
		for _, f := range flags[c.name] {
			if !isSetting(f) && !strings.Contains(out, "--"+f) {
				t.Errorf("%s -h does not list its flag --%s", c.name, f)
			}
		}
		if code2, out2, _ := run(t, nil, "help", c.name); code2 != ExitOK || out2 != out {
			t.Errorf("help %s differs from %s -h", c.name, c.name)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "version")
	if code != ExitOK || !strings.HasPrefix(out, "usersync "+Version()) {
		t.Errorf("version: %d %q", code, out)
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	t.Parallel()
	if code, _, errs := run(t, nil, "frobnicate"); code != ExitUsage || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d %q", code, errs)
	}
	if code, _, errs := run(t, nil, "version", "--nope"); code != ExitUsage || !strings.Contains(errs, "--nope") && !strings.Contains(errs, "-nope") {
		t.Errorf("unknown flag: %d %q", code, errs)
	}
}

// TestConfigErrors walks every configuration error path: each exits 2 with
// one line that names the variable or flag and echoes no secret.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, []byte("s3cr3t-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"schema invalid", map[string]string{"USERSYNC_SCHEMA": "Bad-Name"}, nil, "USERSYNC_SCHEMA"},
		{"schema too long", map[string]string{"USERSYNC_SCHEMA": strings.Repeat("a", 60)}, nil, "USERSYNC_SCHEMA"},
		{"schema flag invalid", nil, []string{"--schema", "1x"}, "--schema"},
		{"reader role invalid", map[string]string{"USERSYNC_READER_ROLE": "x y"}, nil, "USERSYNC_READER_ROLE"},
		{"page size high", map[string]string{"USERSYNC_PAGE_SIZE": "5000"}, nil, "USERSYNC_PAGE_SIZE must be a whole number between 1 and 1000"},
		{"page size zero", map[string]string{"USERSYNC_PAGE_SIZE": "0"}, nil, "USERSYNC_PAGE_SIZE"},
		{"page size text", nil, []string{"--page-size", "many"}, "--page-size"},
		{"lookback", map[string]string{"USERSYNC_LOOKBACK": "ten minutes"}, nil, "USERSYNC_LOOKBACK"},
		{"lookback negative", map[string]string{"USERSYNC_LOOKBACK": "-1m"}, nil, "USERSYNC_LOOKBACK"},
		{"log level", map[string]string{"USERSYNC_LOG_LEVEL": "loud"}, nil, "USERSYNC_LOG_LEVEL"},
		{"log format", map[string]string{"USERSYNC_LOG_FORMAT": "xml"}, nil, "USERSYNC_LOG_FORMAT"},
		{"insecure flag", map[string]string{"USERSYNC_ALLOW_INSECURE_HTTP": "maybe"}, nil, "USERSYNC_ALLOW_INSECURE_HTTP"},
		{"secret and file", map[string]string{"USERSYNC_API_TOKEN": "s3cr3t-env", "USERSYNC_API_TOKEN_FILE": secretFile}, nil, "USERSYNC_API_TOKEN and USERSYNC_API_TOKEN_FILE are both set"},
		{"secret file missing", map[string]string{"USERSYNC_OAUTH_CLIENT_SECRET_FILE": filepath.Join(dir, "nope")}, nil, "USERSYNC_OAUTH_CLIENT_SECRET_FILE"},
		{"snapshot dir with credentials", map[string]string{"USERSYNC_SNAPSHOT_DIR": "s3://AKIA:s3cr3t@analytics/usersync"}, nil, "USERSYNC_SNAPSHOT_DIR holds credentials; use USERSYNC_S3_ACCESS_KEY_ID and USERSYNC_S3_SECRET_ACCESS_KEY"},
		{"snapshot dir with credentials and a slash", nil, []string{"--snapshot-dir", "s3://AKIA:s3cr3t/x@analytics"}, "--snapshot-dir holds credentials"},
		{"snapshot dir bad bucket", map[string]string{"USERSYNC_SNAPSHOT_DIR": "s3://Analytics_Bucket/usersync"}, nil, `USERSYNC_SNAPSHOT_DIR bucket name "Analytics_Bucket" is invalid`},
		{"snapshot dir ip bucket", map[string]string{"USERSYNC_SNAPSHOT_DIR": "s3://10.0.0.1/usersync"}, nil, "USERSYNC_SNAPSHOT_DIR bucket name"},
		{"snapshot dir scheme", map[string]string{"USERSYNC_SNAPSHOT_DIR": "gs://analytics"}, nil, "USERSYNC_SNAPSHOT_DIR unsupported scheme"},
		{"schema ending in _river", map[string]string{"USERSYNC_SCHEMA": "prod_river"}, nil, `USERSYNC_SCHEMA "prod_river" ends in _river`},
		{"schema flag ending in _river", nil, []string{"--schema", "usersync_river"}, `--schema "usersync_river" ends in _river`},
		{"schema public", map[string]string{"USERSYNC_SCHEMA": "public"}, nil, "USERSYNC_SCHEMA \"public\" is the database's shared schema; choose a schema of usersync's own, or set USERSYNC_SCHEMA_FORCE=true"},
		// PostgreSQL's own schemas, which pg_dump skips, even forced.
		{"schema information_schema", map[string]string{"USERSYNC_SCHEMA": "information_schema"}, nil, `USERSYNC_SCHEMA "information_schema" is PostgreSQL's own catalog schema`},
		{"schema information_schema forced", map[string]string{"USERSYNC_SCHEMA_FORCE": "true"}, []string{"--schema", "information_schema"}, `--schema "information_schema" is PostgreSQL's own`},
		{"schema pg_catalog", map[string]string{"USERSYNC_SCHEMA": "pg_catalog", "USERSYNC_SCHEMA_FORCE": "true"}, nil, `USERSYNC_SCHEMA "pg_catalog" must not start with pg_`},
		{"schema pg_toast", map[string]string{"USERSYNC_SCHEMA": "pg_toast"}, nil, `USERSYNC_SCHEMA "pg_toast" must not start with pg_`},
		{"schema pg_temp", map[string]string{"USERSYNC_SCHEMA": "pg_temp_3"}, nil, `USERSYNC_SCHEMA "pg_temp_3" must not start with pg_`},
		{"schema PG_CATALOG", map[string]string{"USERSYNC_SCHEMA": "PG_CATALOG"}, nil, `USERSYNC_SCHEMA "PG_CATALOG" must be lower-case`},
		// URLs that are not s3:// or file://, and credentials in a file:// URL.
		{"snapshot dir s3 one slash with credentials", map[string]string{"USERSYNC_SNAPSHOT_DIR": "s3:/AKIA:s3cr3t@analytics"}, nil, "USERSYNC_SNAPSHOT_DIR holds credentials"},
		{"snapshot dir file with credentials", map[string]string{"USERSYNC_SNAPSHOT_DIR": "file://AKIA:s3cr3t@/var/lib/snapshots"}, nil, "USERSYNC_SNAPSHOT_DIR holds credentials"},
		{"snapshot dir s3 without slashes", nil, []string{"--snapshot-dir", "s3:analytics/usersync"}, `--snapshot-dir starts with "s3:", like a URL, but is neither`},
		{"snapshot dir upper-case scheme with credentials", map[string]string{"USERSYNC_SNAPSHOT_DIR": "S3://AKIA:s3cr3t@analytics"}, nil, "USERSYNC_SNAPSHOT_DIR holds credentials"},
		{"snapshot dir upper-case scheme", map[string]string{"USERSYNC_SNAPSHOT_DIR": "S3://analytics"}, nil, `USERSYNC_SNAPSHOT_DIR unsupported scheme "S3"`},
		// a password on the command line shows in ps and shell history.
		{"database url flag with password", nil, []string{"--database-url", "postgres://u:s3cr3t@db/analytics"}, "--database-url holds a password"},
		{"database url flag with raw # in password", nil, []string{"--database-url", "postgres://u:s3cr3t#x@db/analytics"}, "--database-url holds a password"},
		{"database url flag with query password", nil, []string{"--database-url", "postgres://db/analytics?password=s3cr3t"}, "--database-url holds a password"},
		{"database url flag keyword password", nil, []string{"--database-url", "host=db password='s3cr3t x'"}, "--database-url holds a password"},
		{"database url file and variable", map[string]string{"DATABASE_URL": "postgres://db/x", "DATABASE_URL_FILE": secretFile}, nil, "DATABASE_URL and DATABASE_URL_FILE are both set"},
		{"schema force invalid", map[string]string{"USERSYNC_SCHEMA_FORCE": "yes please"}, nil, "USERSYNC_SCHEMA_FORCE must be true or false"},
		{"max response bytes decimal unit", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "64MB"}, nil, "USERSYNC_MAX_RESPONSE_BYTES must be a size between 64KiB and 4GiB"},
		{"max response bytes too small", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "1000"}, nil, "USERSYNC_MAX_RESPONSE_BYTES"},
		{"max response bytes zero", nil, []string{"--max-response-bytes", "0MiB"}, "--max-response-bytes"},
		{"max response bytes too large", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "5GiB"}, nil, "USERSYNC_MAX_RESPONSE_BYTES"},
		{"max response bytes overflow", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "9223372036854775807GiB"}, nil, "USERSYNC_MAX_RESPONSE_BYTES"},
		{"max response bytes fraction", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "1.5MiB"}, nil, "USERSYNC_MAX_RESPONSE_BYTES"},
		{"max response bytes negative", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "-1MiB"}, nil, "USERSYNC_MAX_RESPONSE_BYTES"},
		{"max response memory text", map[string]string{"USERSYNC_MAX_RESPONSE_MEMORY": "lots"}, nil, "USERSYNC_MAX_RESPONSE_MEMORY must be a size between 64KiB and 8GiB"},
		{"max response memory decimal unit", nil, []string{"--max-response-memory", "200MB"}, "--max-response-memory must be a size between 64KiB and 8GiB"},
		{"max response memory zero", map[string]string{"USERSYNC_MAX_RESPONSE_MEMORY": "0"}, nil, "USERSYNC_MAX_RESPONSE_MEMORY must be a size"},
		{"max response memory too large", map[string]string{"USERSYNC_MAX_RESPONSE_MEMORY": "9GiB"}, nil, "USERSYNC_MAX_RESPONSE_MEMORY must be a size"},
		{"max response memory below one body", map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": "128MiB", "USERSYNC_MAX_RESPONSE_MEMORY": "100MiB"}, nil,
			"USERSYNC_MAX_RESPONSE_MEMORY must be at least USERSYNC_MAX_RESPONSE_BYTES (128MiB), not 100MiB"},
		{"max future skew negative", map[string]string{"USERSYNC_MAX_FUTURE_SKEW": "-1h"}, nil, "USERSYNC_MAX_FUTURE_SKEW must be a duration between 1m0s and"},
		{"schedule zone without expression", map[string]string{"USERSYNC_SYNC_SCHEDULE": "CRON_TZ="}, nil, "USERSYNC_SYNC_SCHEDULE is not a valid schedule"},
		{"schedule TZ without expression", map[string]string{"USERSYNC_SNAPSHOT_SCHEDULE": "TZ="}, nil, "USERSYNC_SNAPSHOT_SCHEDULE is not a valid schedule"},
		{"schedule every zero", map[string]string{"USERSYNC_RECONCILE_SCHEDULE": "@every 0s"}, nil, "USERSYNC_RECONCILE_SCHEDULE is not a valid schedule (@every takes a positive interval)"},
		{"schedule under a minute", map[string]string{"USERSYNC_SYNC_SCHEDULE": "@every 30s"}, nil, "USERSYNC_SYNC_SCHEDULE @every 30s is shorter than 1m0s"},
		{"schedule flag under the minimum", map[string]string{"USERSYNC_SCHEDULE_MIN_INTERVAL": "10s"}, []string{"--sync-schedule", "@every 5s"}, "--sync-schedule @every 5s is shorter than 10s"},
		{"schedule minimum zero", map[string]string{"USERSYNC_SCHEDULE_MIN_INTERVAL": "0s"}, nil, "USERSYNC_SCHEDULE_MIN_INTERVAL must be a duration between 1s and"},
		{"api budget zero", map[string]string{"USERSYNC_API_BUDGET": "0"}, nil, "USERSYNC_API_BUDGET must be a share above 0 and at most 1"},
		{"api budget above one", map[string]string{"USERSYNC_API_BUDGET": "1.5"}, nil, "USERSYNC_API_BUDGET must be a share above 0 and at most 1"},
		{"api budget text", map[string]string{"USERSYNC_API_BUDGET": "abc"}, nil, "USERSYNC_API_BUDGET must be a share"},
		{"api budget NaN", nil, []string{"--api-budget", "NaN"}, "--api-budget must be a share"},
		{"snapshot keep for negative", map[string]string{"USERSYNC_SNAPSHOT_KEEP_FOR": "-1d"}, nil, "USERSYNC_SNAPSHOT_KEEP_FOR must be a number of days"},
		{"snapshot keep for text", map[string]string{"USERSYNC_SNAPSHOT_KEEP_FOR": "a month"}, nil, "USERSYNC_SNAPSHOT_KEEP_FOR must be a number of days"},
		{"max future skew zero", map[string]string{"USERSYNC_MAX_FUTURE_SKEW": "0"}, nil, "USERSYNC_MAX_FUTURE_SKEW must be a duration between 1m0s and"},
		{"max future skew text", nil, []string{"--max-future-skew", "a day"}, "--max-future-skew"},
		{"secret file empty", map[string]string{"USERSYNC_OAUTH_REFRESH_TOKEN_FILE": emptyFile}, nil, "USERSYNC_OAUTH_REFRESH_TOKEN_FILE"},
		{"slot time below a second", map[string]string{"USERSYNC_SLOT_TIME": "500ms"}, nil, "USERSYNC_SLOT_TIME must be 0 (off) or a duration between 1s and"},
		{"slot time negative", nil, []string{"--slot-time", "-1s"}, "--slot-time must be a duration between 0s and"},
		{"slow workers zero", map[string]string{"USERSYNC_SLOW_WORKERS": "0"}, nil, "USERSYNC_SLOW_WORKERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errs := run(t, tt.env, append([]string{"version"}, tt.args...)...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(errs, tt.want) {
				t.Errorf("stderr %q does not contain %q", errs, tt.want)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("error is not one line: %q", errs)
			}
			if strings.Contains(errs, "s3cr3t") {
				t.Errorf("error echoes a secret: %q", errs)
			}
		})
	}
}

func TestDatabaseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  string
		code int
		want string
	}{
		{"unset", "", ExitUsage, "DATABASE_URL is not set"},
		{"malformed", "postgres://u:s3cr3t@[::1/db", ExitUsage, "DATABASE_URL is not a valid PostgreSQL URL"},
		{"bad option", "postgres://u:s3cr3t@127.0.0.1/db?sslmode=sometimes", ExitUsage, "DATABASE_URL is not a valid PostgreSQL URL"},
		{"unreachable", "postgres://u:s3cr3t@127.0.0.1:1/db?connect_timeout=2", ExitFailure, "connecting to the database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errs := run(t, map[string]string{"DATABASE_URL": tt.url}, "migrate")
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d stderr %q; want exit %d and %q", code, errs, tt.code, tt.want)
			}
			if strings.Contains(errs, "s3cr3t") {
				t.Errorf("password echoed: %q", errs)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("error is not one line: %q", errs)
			}
		})
	}
}

func TestEnvironmentThenFlags(t *testing.T) {
	t.Parallel()
	fsEnv := map[string]string{"USERSYNC_PAGE_SIZE": "10", "USERSYNC_SCHEMA": "from_env"}
	// A flag overrides the environment; the environment overrides the default.
	code, _, errs := run(t, fsEnv, "version", "--page-size", "20")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	cfg, err := configFor(fsEnv, "--page-size", "20")
	if err != nil {
		t.Fatal(err)
	}
	got := cfg
	if got.PageSize != 20 || got.Schema != "from_env" || got.Lookback.String() != "10m0s" {
		t.Errorf("config = %+v", got)
	}
}

func TestSecretFromFileAndString(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(path, []byte("tok-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configFor(map[string]string{"USERSYNC_API_TOKEN_FILE": path, "DATABASE_URL": "postgres://u:pw-123@h/db"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIToken != "tok-from-file" {
		t.Errorf("token = %q", cfg.APIToken)
	}
}

func TestRequireAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"USERSYNC_API_TOKEN": "x", "USERSYNC_API_URL": "https://api.example.com"}, ""},
		{map[string]string{"USERSYNC_API_TOKEN": "x"}, "USERSYNC_API_URL is not set"},
		{map[string]string{"USERSYNC_API_URL": "https://api.example.com"}, "USERSYNC_API_TOKEN is not set"},
		{map[string]string{"USERSYNC_API_URL": "http://api.example.com", "USERSYNC_API_TOKEN": "x"}, "USERSYNC_API_URL uses http://"},
		{map[string]string{"USERSYNC_API_URL": "http://api.example.com", "USERSYNC_API_TOKEN": "x", "USERSYNC_ALLOW_INSECURE_HTTP": "true"}, ""},
		{map[string]string{"USERSYNC_API_URL": "http://127.0.0.1:8080", "USERSYNC_API_TOKEN": "x"}, ""},
		{map[string]string{"USERSYNC_API_URL": "https://api.example.com/api/v2", "USERSYNC_API_TOKEN": "x"}, "without /api/v2"},
		{map[string]string{"USERSYNC_API_URL": "not a url", "USERSYNC_API_TOKEN": "x"}, "USERSYNC_API_URL must be an absolute"},
		{map[string]string{"USERSYNC_API_TOKEN": "x", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_API_URL": "https://api.example.com"}, "both set"},
		{map[string]string{"USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_API_URL": "https://api.example.com"}, "USERSYNC_OAUTH_TOKEN_URL is not set"},
		// No refresh token: it may be stored (newAPIClient checks).
		{map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_OAUTH_CLIENT_SECRET": "s", "USERSYNC_API_URL": "https://api.example.com"}, ""},
		{map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_API_URL": "https://api.example.com"}, "USERSYNC_OAUTH_CLIENT_SECRET is not set"},
		{map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "http://a.example.com/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_OAUTH_CLIENT_SECRET": "s", "USERSYNC_API_URL": "https://api.example.com"}, "USERSYNC_OAUTH_TOKEN_URL uses http://"},
		{map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a/oauth/token", "USERSYNC_OAUTH_AUTHORIZE_URL": "http://a.example.com/oauth/authorize", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_OAUTH_CLIENT_SECRET": "s", "USERSYNC_API_URL": "https://api.example.com"}, "USERSYNC_OAUTH_AUTHORIZE_URL uses http://"},
		{map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "c", "USERSYNC_OAUTH_CLIENT_SECRET": "s", "USERSYNC_OAUTH_REFRESH_TOKEN": "r", "USERSYNC_API_URL": "https://api.example.com"}, ""},
	}
	for _, tt := range tests {
		cfg, err := configFor(tt.env)
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.RequireAPI()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: unexpected %v", tt.env, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err %v, want %q", tt.env, err, tt.want)
		}
	}
}

// TestMigrateCommand runs migrate twice in-process against the test database.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 2)
	name := schematest.NewSchemaName(t, pool)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": ""}
	code, out, errs := run(t, env, "migrate")
	if code != ExitOK {
		t.Fatalf("migrate: exit %d: %s", code, errs)
	}
	migrations, err := schema.Migrations(name)
	if err != nil {
		t.Fatal(err)
	}
	latest := fmt.Sprint(migrations[len(migrations)-1].Version)
	for _, want := range []string{"schema " + name + " migrated to version " + latest, "table " + name + ".users ", "view  " + name + ".users_current", "River schema " + name + "_river: applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, env, "migrate")
	if code != ExitOK || !strings.Contains(out, "is up to date") {
		t.Errorf("second migrate: exit %d out %q err %q", code, out, errs)
	}
	// USERSYNC_READER_ROLE= (empty) skips the role: no grant to anyone.
	if strings.Contains(out, "may read the analysts' tables") || strings.Contains(out, "notice:") {
		t.Errorf("migrate with USERSYNC_READER_ROLE= granted a reader role:\n%s", out)
	}
	var grantees []string
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(DISTINCT grantee::text), '{}') FROM information_schema.role_table_grants
		WHERE table_schema = $1 AND grantee <> current_user`, name).Scan(&grantees); err != nil {
		t.Fatal(err)
	}
	if len(grantees) != 0 {
		t.Errorf("migrate with USERSYNC_READER_ROLE= granted %v on %s", grantees, name)
	}
}

// TestReaderRoleEmptySkips: USERSYNC_READER_ROLE set empty, or
// --reader-role=, is no role (its documented "empty to skip"), not the
// default; unset is the default. USERSYNC_OAUTH_SCOPES set empty is no
// scope, as documented.
func TestReaderRoleEmptySkips(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, nil, "usersync_reader"},
		{map[string]string{"USERSYNC_READER_ROLE": ""}, nil, ""},
		{nil, []string{"--reader-role="}, ""},
		{map[string]string{"USERSYNC_READER_ROLE": "analysts"}, nil, "analysts"},
		{map[string]string{"USERSYNC_READER_ROLE": "analysts"}, []string{"--reader-role="}, ""},
	} {
		cfg, err := configFor(tc.env, tc.args...)
		if err != nil || cfg.ReaderRole != tc.want {
			t.Errorf("env %v args %v: reader role %q (%v), want %q", tc.env, tc.args, cfg.ReaderRole, err, tc.want)
		}
	}
	// USERSYNC_OAUTH_SCOPES= is documented the same way: no scope sent.
	if cfg, err := configFor(map[string]string{"USERSYNC_OAUTH_SCOPES": ""}); err != nil || cfg.OAuthScopes != "" {
		t.Errorf("USERSYNC_OAUTH_SCOPES=: scopes %q (%v), want none", cfg.OAuthScopes, err)
	}
	// Main reads the environment the same way.
	if got := config.Environ([]string{"USERSYNC_READER_ROLE="}); got == nil {
		t.Fatal("no lookup")
	} else if v, ok := got("USERSYNC_READER_ROLE"); !ok || v != "" {
		t.Errorf("USERSYNC_READER_ROLE= looks up as %q, %v", v, ok)
	}
}

// TestMigrateRefusesOwnRoleAsReader: USERSYNC_READER_ROLE naming the
// migrating user is a usage error that names the setting, and the schema
// stays migratable.
func TestMigrateRefusesOwnRoleAsReader(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 2)
	name := schematest.NewSchemaName(t, pool)
	user := pool.Config().ConnConfig.User
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": user}
	code, _, errs := run(t, env, "migrate")
	if code != ExitUsage || !strings.Contains(errs, "USERSYNC_READER_ROLE "+user+" is the migrating user") {
		t.Errorf("migrate with the reader role %s: exit %d, stderr %q", user, code, errs)
	}
	if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("error is not one line: %q", errs)
	}
	env["USERSYNC_READER_ROLE"] = ""
	if code, _, errs := run(t, env, "migrate"); code != ExitOK {
		t.Errorf("migrate afterwards: exit %d: %s", code, errs)
	}
}

// TestSchemaForceAndLimits: a forced schema name is accepted, and the size
// and skew settings parse their documented forms.
func TestSchemaForceAndLimits(t *testing.T) {
	t.Parallel()
	for _, schemaName := range []string{"public", "prod_river"} {
		cfg, err := configFor(map[string]string{"USERSYNC_SCHEMA": schemaName}, "--schema-force=true")
		if err != nil || cfg.Schema != schemaName || !cfg.SchemaForce {
			t.Errorf("forced schema %s: %+v %v", schemaName, cfg.Schema, err)
		}
	}
	for _, schemaName := range []string{"usersync", "river", "river_data", "my_riverx"} {
		if _, err := configFor(map[string]string{"USERSYNC_SCHEMA": schemaName}); err != nil {
			t.Errorf("schema %s: %v", schemaName, err)
		}
	}
	cfg, err := configFor(nil)
	if err != nil || cfg.MaxResponseBytes != 64<<20 || cfg.MaxResponseMemory != 128<<20 || cfg.MaxFutureSkew != 24*time.Hour {
		t.Errorf("defaults: %d %d %s %v", cfg.MaxResponseBytes, cfg.MaxResponseMemory, cfg.MaxFutureSkew, err)
	}
	for env, want := range map[[2]string]int64{{"256MiB", ""}: 512 << 20, {"", "64MiB"}: 64 << 20, {"1MiB", "3MiB"}: 3 << 20} {
		cfg, err := configFor(map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": env[0], "USERSYNC_MAX_RESPONSE_MEMORY": env[1]})
		if err != nil || cfg.MaxResponseMemory != want {
			t.Errorf("USERSYNC_MAX_RESPONSE_BYTES=%q USERSYNC_MAX_RESPONSE_MEMORY=%q: %d %v, want %d", env[0], env[1], cfg.MaxResponseMemory, err, want)
		}
	}
	for in, want := range map[string]int64{"65536": 64 << 10, "64KiB": 64 << 10, "1 MiB": 1 << 20, " 256MiB ": 256 << 20, "4GiB": 4 << 30, "1048577": 1<<20 + 1} {
		cfg, err := configFor(map[string]string{"USERSYNC_MAX_RESPONSE_BYTES": in})
		if err != nil || cfg.MaxResponseBytes != want {
			t.Errorf("USERSYNC_MAX_RESPONSE_BYTES=%q: %d %v, want %d", in, cfg.MaxResponseBytes, err, want)
		}
	}
	for in, want := range map[string]time.Duration{"1m": time.Minute, "90m": 90 * time.Minute, "8760h": 8760 * time.Hour} {
		cfg, err := configFor(nil, "--max-future-skew", in)
		if err != nil || cfg.MaxFutureSkew != want || syncerConfig(cfg, nil).MaxFutureSkew != want {
			t.Errorf("--max-future-skew %q: %s (syncer %s) %v, want %s", in, cfg.MaxFutureSkew, syncerConfig(cfg, nil).MaxFutureSkew, err, want)
		}
	}
	if _, err := configFor(map[string]string{"USERSYNC_SCHEDULE_MIN_INTERVAL": "1s", "USERSYNC_SYNC_SCHEDULE": "@every 2s"}); err != nil {
		t.Errorf("@every 2s with a minimum of 1s: %v", err)
	}
}

// TestUnknownVariables: a USERSYNC_* variable that is no setting gets one
// warning line naming it and the closest setting, or exit 2 with
// --strict-config / USERSYNC_STRICT_CONFIG; settings, secrets' _FILE forms
// and the repository's tool variables are not reported.
func TestUnknownVariables(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("t0ken-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	quiet := map[string]string{"USERSYNC_SYNC_SCHEDULE": "@hourly", "USERSYNC_API_TOKEN_FILE": secret,
		"USERSYNC_BENCH_USERS": "10", "USERSYNC_DEV_PG_NAME": "x", "USERSYNC_BIN": "bin/usersync", "OTHER_SCHEDUEL": "x"}
	if code, _, errs := run(t, quiet, "version", "--strict-config"); code != ExitOK || errs != "" {
		t.Errorf("known variables: exit %d, stderr %q", code, errs)
	}
	typo := map[string]string{"USERSYNC_SYNC_SCHEDUEL": "@hourly", "USERSYNC_PAGESIZE": "10"}
	code, _, errs := run(t, typo, "version")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != ExitOK || len(lines) != 2 ||
		!strings.Contains(lines[0], "USERSYNC_PAGESIZE is not a setting (did you mean USERSYNC_PAGE_SIZE?)") ||
		!strings.Contains(lines[1], "USERSYNC_SYNC_SCHEDUEL is not a setting (did you mean USERSYNC_SYNC_SCHEDULE?)") ||
		!strings.Contains(lines[1], "WARN") {
		t.Errorf("typos: exit %d, stderr:\n%s", code, errs)
	}
	for _, strict := range []struct {
		env  map[string]string
		args []string
	}{
		{typo, []string{"version", "--strict-config"}},
		{map[string]string{"USERSYNC_SYNC_SCHEDUEL": "@hourly", "USERSYNC_STRICT_CONFIG": "true"}, []string{"version"}},
	} {
		code, _, errs := run(t, strict.env, strict.args...)
		if code != ExitUsage || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "USERSYNC_SYNC_SCHEDUEL is not a setting (did you mean USERSYNC_SYNC_SCHEDULE?)") {
			t.Errorf("strict %v: exit %d, stderr %q", strict.args, code, errs)
		}
	}
}

// TestBoolSettingFlags: a boolean setting's flag may be given bare, or with
// =true or =false.
func TestBoolSettingFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"--schema-force"}, true}, {[]string{"--schema-force", "--page-size", "5"}, true}, {[]string{"--schema-force=true"}, true}, {[]string{"--schema-force=false"}, false}} {
		cfg, err := configFor(map[string]string{"USERSYNC_SCHEMA": "public"}, tt.args...)
		if tt.want && (err != nil || !cfg.SchemaForce) || !tt.want && err == nil {
			t.Errorf("%v: SchemaForce %v, %v", tt.args, cfg.SchemaForce, err)
		}
	}
}

// TestSnapshotOutRefusesCredentials: usersync snapshot --out checks its
// folder as USERSYNC_SNAPSHOT_DIR is checked, before connecting, and
// never echoes the password.
func TestSnapshotOutRefusesCredentials(t *testing.T) {
	t.Parallel()
	for _, out := range []string{"s3:/AKIA:s3cr3t@analytics", "file://AKIA:s3cr3t@/tmp/snapshots", "s3://AKIA:s3cr3t@analytics"} {
		code, stdout, errs := run(t, map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db?sslmode=disable"}, "snapshot", "--out", out)
		if code != ExitUsage || !strings.Contains(errs, "--out holds credentials") {
			t.Errorf("%s: exit %d, stderr %q", out, code, errs)
		}
		if strings.Contains(stdout+errs, "s3cr3t") {
			t.Errorf("%s: the password shows: %q", out, stdout+errs)
		}
	}
}

// TestDatabaseURLFromFileOrPasswordlessFlag: DATABASE_URL_FILE is read like
// a secret's _FILE, and --database-url without a password is accepted.
func TestDatabaseURLFromFileOrPasswordlessFlag(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "dsn")
	const dsn = "postgres://u:s3cr3t@db/analytics?sslmode=require"
	if err := os.WriteFile(file, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configFor(map[string]string{"DATABASE_URL_FILE": file})
	if err != nil || cfg.DatabaseURL != dsn {
		t.Errorf("DATABASE_URL_FILE: %q, %v", cfg.DatabaseURL, err)
	}
	cfg, err = configFor(nil, "--database-url", "postgres://u@db/analytics")
	if err != nil || cfg.DatabaseURL != "postgres://u@db/analytics" {
		t.Errorf("--database-url without a password: %q, %v", cfg.DatabaseURL, err)
	}
}

package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/secret"
)

// Config is every setting of usersync, after the environment and then the
// command line have been applied. Each field is set by one row of the
// settings table (TestEveryConfigFieldHasASetting), the only list of settings.
type Config struct {
	DatabaseURL       string
	APIURL            string
	APIToken          string
	OAuthTokenURL     string
	OAuthClientID     string
	OAuthClientSecret string
	OAuthRefreshToken string
	OAuthAuthorizeURL string
	OAuthScopes       string
	AllowInsecureHTTP bool
	Schema            string
	SchemaForce       bool
	StrictConfig      bool
	ReaderRole        string
	SnapshotDir       string
	PageSize          int
	Lookback          time.Duration
	MaxResponseBytes  int64
	// MaxResponseMemory bounds the response bodies read at once, together;
	// Load resolves an unset one to twice MaxResponseBytes.
	MaxResponseMemory int64
	APIBudget         float64
	MaxFutureSkew     time.Duration
	LogLevel          string
	LogFormat         string

	HTTPAddr            string
	HTTPToken           string
	HTTPBasicAuth       string
	HTTPHosts           []string
	SyncSchedule        string
	ReconcileSchedule   string
	SnapshotSchedule    string
	ScheduleMinInterval time.Duration
	SnapshotAfterSync   bool
	JobTimeout          time.Duration
	LockTimeout         time.Duration
	ShutdownTimeout     time.Duration
	Workers             int
	LongWorkers         int
	SnapshotWorkers     int
	SlowWorkers         int
	SlotTime            time.Duration
	FleetTick           time.Duration
	RateLimitWait       time.Duration
	AccountCache        int
	DataConnections     bool
	TimeSlice           time.Duration
	ReconcileMaxDelete  float64
	ReconcileMembership string
	// ReconcileResumeWithin is syncer.Config.ReconcileResumeWithin
	// (negative: off).
	ReconcileResumeWithin time.Duration

	SnapshotCompression  string
	SnapshotKeep         int
	SnapshotKeepFor      time.Duration
	SnapshotBatchRows    int
	SnapshotRowGroupRows int
	SnapshotReaders      int
	S3Endpoint           string
	S3Region             string
	S3AccessKeyID        string
	S3SecretAccessKey    string
	S3PathStyle          bool

	PIIHash          []string
	PIIDrop          []string
	PIIDropUnknown   bool
	PIIKey           string
	DeletedRetention time.Duration
	// SecretsKey seals the secrets stored in PostgreSQL; nil when unset.
	SecretsKey *secret.Key
	// PII is the personal-data policy built from the PII settings; nil
	// when none is set.
	PII *normalize.Policy
}

// Setting is one configuration setting: its environment variable, its flag
// (empty for secrets, which only come from the environment or a _FILE), its
// default, its meaning, and how it is parsed into a Config. The table below is
// the single source of the configuration reference.
type Setting struct {
	Env     string
	Flag    string
	Default string
	Meaning string
	Example string
	Secret  bool
	// File says the setting is also read from <Env>_FILE, like a
	// secret's, though it has a flag (DATABASE_URL, whose password may
	// be in it: Load refuses the flag then).
	File bool
	// EmptyIsValue says a variable set empty is the empty value (its
	// meaning says what empty does), not unset: every other setting takes
	// an empty variable for an unset one, and so its default.
	EmptyIsValue bool
	// Scope says whether a registered account sets it (PerAccount) or
	// the fleet alone does (FleetWide); every setting says which
	// (TestEverySettingHasAScope).
	Scope Scope
	set   func(c *Config, v string) error
}

// Settings lists every setting usersync reads, in the order of the
// reference.
func Settings() []Setting {
	return append(append(append(baseSettings(), piiSettings()...), fleetSettings()...), secretsSettings()...)
}

func baseSettings() []Setting {
	return []Setting{
		{Env: "DATABASE_URL", Scope: FleetWide, Flag: "database-url", Meaning: "PostgreSQL connection URL (or libpq keyword/value string) of the warehouse and of River's job tables; its password is never printed. Also read from DATABASE_URL_FILE; --database-url is refused when it holds a password (other local users see command lines in ps, and shells keep them): give the password in DATABASE_URL, DATABASE_URL_FILE, PGPASSWORD or a password file. For a database on another host give sslmode=verify-full (with sslrootcert= when its CA is not in the system store): without sslmode the driver silently falls back to plaintext, and usersync warns at start. usersync's sessions run without JIT compilation (jit=off) unless the URL sets jit.",
			Example: "postgres://usersync@db:5432/analytics?sslmode=require", Secret: false, File: true,
			set: func(c *Config, v string) error { c.DatabaseURL = v; return nil }},
		{Env: "USERSYNC_API_URL", Scope: PerAccount, Flag: "api-url", Meaning: "base URL of the API, without /api/v2 (e.g. https://api.example.com). http:// is accepted only for loopback hosts unless USERSYNC_ALLOW_INSECURE_HTTP=true. A query string, fragment or user:password in it is refused: the token goes in USERSYNC_API_TOKEN_FILE.",
			Example: "https://api.example.com",
			set:     setAPIURL},
		{Env: "USERSYNC_API_TOKEN", Scope: PerAccount, Meaning: "static bearer token for the API (instead of OAuth). Also read from USERSYNC_API_TOKEN_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.APIToken = v; return nil }},
		{Env: "USERSYNC_OAUTH_TOKEN_URL", Scope: PerAccount, Flag: "oauth-token-url", Meaning: "OAuth 2 token endpoint (the refresh-token grant, and usersync auth login's authorization-code grant); setting it turns OAuth on.",
			Example: "https://api.example.com/oauth/token",
			set:     func(c *Config, v string) error { c.OAuthTokenURL = v; return nil }},
		{Env: "USERSYNC_OAUTH_CLIENT_ID", Scope: PerAccount, Flag: "oauth-client-id", Meaning: "OAuth client id of the registered application.",
			set: func(c *Config, v string) error { c.OAuthClientID = v; return nil }},
		{Env: "USERSYNC_OAUTH_CLIENT_SECRET", Scope: PerAccount, Meaning: "OAuth client secret. Also read from USERSYNC_OAUTH_CLIENT_SECRET_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.OAuthClientSecret = v; return nil }},
		{Env: "USERSYNC_OAUTH_REFRESH_TOKEN", Scope: PerAccount, Meaning: "initial OAuth refresh token, not needed once usersync auth login has stored one: the stored token (in the oauth_tokens table, rotated on every refresh) is always preferred, and this one is the fallback when the API refuses it. Also read from USERSYNC_OAUTH_REFRESH_TOKEN_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.OAuthRefreshToken = v; return nil }},
		{Env: "USERSYNC_OAUTH_AUTHORIZE_URL", Scope: PerAccount, Flag: "oauth-authorize-url", Meaning: "OAuth 2 authorize endpoint that usersync auth login sends the browser to; empty derives it from USERSYNC_OAUTH_TOKEN_URL by replacing its last path segment with authorize (…/oauth/token gives …/oauth/authorize).",
			Example: "https://api.example.com/oauth/authorize",
			set:     func(c *Config, v string) error { c.OAuthAuthorizeURL = v; return nil }},
		{Env: "USERSYNC_OAUTH_SCOPES", Scope: PerAccount, Flag: "oauth-scopes", Default: schema.ReadScopes(), Meaning: "space-separated scopes usersync auth login asks for: read access to users, teams, roles and profiles is all usersync needs; empty sends no scope (the application's default). auth login, auth status and status show the scope the token endpoint granted, with a warning when one can write (users.write, users.delete, users.all).",
			EmptyIsValue: true,
			set:          func(c *Config, v string) error { c.OAuthScopes = strings.Join(strings.Fields(v), " "); return nil }},
		{Env: "USERSYNC_ALLOW_INSECURE_HTTP", Scope: FleetWide, Flag: "allow-insecure-http", Default: "false", Meaning: "accept an http:// API URL on a non-loopback host (never do this in production).",
			set: func(c *Config, v string) error { return parseBool(&c.AllowInsecureHTTP, v) }},
		{Env: "USERSYNC_SCHEMA", Scope: PerAccount, Flag: "schema", Default: "usersync", Meaning: "PostgreSQL schema of the warehouse tables; River's tables go to <schema>_river. A name ending in _river (another deployment's job tables) or public is refused, for the default account unless USERSYNC_SCHEMA_FORCE=true, for a registered account always; PostgreSQL's own schemas (information_schema and every pg_ name: pg_catalog, pg_toast, pg_temp_N), which pg_dump skips, are always refused.",
			set: func(c *Config, v string) error {
				if err := schema.ValidateIdentifier(v); err != nil {
					return err
				}
				if v == "information_schema" {
					return errors.New(`"information_schema" is PostgreSQL's own catalog schema (pg_dump skips it, with every table and token in it); choose a schema of usersync's own`)
				}
				c.Schema = v
				return nil
			}},
		{Env: "USERSYNC_SCHEMA_FORCE", Scope: FleetWide, Flag: "schema-force", Default: "false", Meaning: "accept a USERSYNC_SCHEMA that ends in _river or is public (only when that schema really is this deployment's own); the default account's only: accounts add never takes such a --schema.",
			set: func(c *Config, v string) error { return parseBool(&c.SchemaForce, v) }},
		{Env: "USERSYNC_READER_ROLE", Scope: PerAccount, Flag: "reader-role", Default: "usersync_reader", Meaning: "read-only role for analysts, created by migrate when missing (if allowed) and granted SELECT on the warehouse tables; empty to skip. It must not be the migrating user or a role that user belongs to.",
			EmptyIsValue: true,
			set: func(c *Config, v string) error {
				if v != "" {
					if err := schema.ValidateIdentifier(v); err != nil {
						return err
					}
				}
				c.ReaderRole = v
				return nil
			}},
		{Env: "USERSYNC_SNAPSHOT_DIR", Scope: FleetWide, Flag: "snapshot-dir", Default: "snapshots", Meaning: "where Parquet snapshots are written: a folder (files 0640, folders 0750), or s3://bucket/prefix for S3-compatible storage (credentials go in USERSYNC_S3_ACCESS_KEY_ID and USERSYNC_S3_SECRET_ACCESS_KEY, never in the URL, which is refused); off disables snapshots. Each deployment writes, reads and ages out only <dir>/<USERSYNC_SCHEMA>/, so deployments may share it; each table's <table>/current shows its newest complete snapshot; a symbolic link under it other than those is refused. Any other value that starts like a URL (s3:/…, s3:bucket, gs://…) is refused, not taken for a folder: write a folder whose first part holds a colon as ./like:this.",
			Example: "s3://analytics/usersync",
			set:     func(c *Config, v string) error { c.SnapshotDir = v; return CheckSnapshotDir(v) }},
		{Env: "USERSYNC_SNAPSHOT_COMPRESSION", Scope: FleetWide, Flag: "snapshot-compression", Default: "zstd", Meaning: "Parquet compression of snapshots: zstd, snappy or none.",
			set: func(c *Config, v string) error { return parseEnum(&c.SnapshotCompression, v, "zstd", "snappy", "none") }},
		{Env: "USERSYNC_SNAPSHOT_KEEP", Scope: PerAccount, Flag: "snapshot-keep", Default: "30", Meaning: "how many complete snapshots to keep; older ones are removed (the newest complete one never is).",
			set: func(c *Config, v string) error { return parseInt(&c.SnapshotKeep, v, 1, 100000) }},
		{Env: "USERSYNC_SNAPSHOT_KEEP_FOR", Scope: PerAccount, Flag: "snapshot-keep-for", Default: "14d", Meaning: "beyond the newest USERSYNC_SNAPSHOT_KEEP, also keep the last complete snapshot of each UTC day this far back (days like 30d, or a duration; 0 keeps none beyond them).",
			set: func(c *Config, v string) error { return parseAge(&c.SnapshotKeepFor, v, 3650) }},
		{Env: "USERSYNC_SNAPSHOT_BATCH_ROWS", Scope: FleetWide, Flag: "snapshot-batch-rows", Default: "16384", Meaning: "rows read from PostgreSQL into one Arrow record batch; memory grows with it.",
			set: func(c *Config, v string) error { return parseInt(&c.SnapshotBatchRows, v, 256, 1<<22) }},
		{Env: "USERSYNC_SNAPSHOT_ROW_GROUP_ROWS", Scope: FleetWide, Flag: "snapshot-row-group-rows", Default: "1048576", Meaning: "most rows in one Parquet row group (a row group is also cut at 64 MiB of values); a row group is held in memory until written.",
			set: func(c *Config, v string) error { return parseInt(&c.SnapshotRowGroupRows, v, 1024, 1<<26) }},
		{Env: "USERSYNC_SNAPSHOT_READERS", Scope: FleetWide, Flag: "snapshot-readers", Default: "2", Meaning: "PostgreSQL connections a snapshot reads each table over in parallel, all through the snapshot transaction's exported snapshot (so every table stays consistent); at most the pool's size less one (3 for usersync snapshot); 1 reads each table in one query.",
			set: func(c *Config, v string) error { return parseInt(&c.SnapshotReaders, v, 1, 16) }},
		{Env: "USERSYNC_S3_ENDPOINT", Scope: FleetWide, Flag: "s3-endpoint", Meaning: "S3-compatible endpoint for s3:// snapshot folders (host:port, or a URL saying http or https); empty for AWS S3.",
			Example: "https://minio.internal:9000",
			set:     func(c *Config, v string) error { c.S3Endpoint = v; return nil }},
		{Env: "USERSYNC_S3_REGION", Scope: FleetWide, Flag: "s3-region", Meaning: "region of the snapshot bucket; empty lets the client discover it.",
			set: func(c *Config, v string) error { c.S3Region = v; return nil }},
		{Env: "USERSYNC_S3_ACCESS_KEY_ID", Scope: FleetWide, Flag: "s3-access-key-id", Meaning: "access key id for the snapshot bucket; empty uses the instance or pod role.",
			set: func(c *Config, v string) error { c.S3AccessKeyID = v; return nil }},
		{Env: "USERSYNC_S3_SECRET_ACCESS_KEY", Scope: FleetWide, Meaning: "secret access key for the snapshot bucket. Also read from USERSYNC_S3_SECRET_ACCESS_KEY_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.S3SecretAccessKey = v; return nil }},
		{Env: "USERSYNC_S3_PATH_STYLE", Scope: FleetWide, Flag: "s3-path-style", Default: "false", Meaning: "address buckets as endpoint/bucket (MinIO and most self-hosted servers need it).",
			set: func(c *Config, v string) error { return parseBool(&c.S3PathStyle, v) }},
		{Env: "USERSYNC_PAGE_SIZE", Scope: PerAccount, Flag: "page-size", Default: "1000", Meaning: "page[size] of user requests (the API's maximum is 1000).",
			set: func(c *Config, v string) error { return parseInt(&c.PageSize, v, 1, 1000) }},
		{Env: "USERSYNC_LOOKBACK", Scope: PerAccount, Flag: "lookback", Default: "10m", Meaning: "how far before the watermark an incremental sync starts, to catch late-visible and out-of-order updates.",
			set: func(c *Config, v string) error { return parseDuration(&c.Lookback, v, 0, 7*24*time.Hour) }},
		{Env: "USERSYNC_API_BUDGET", Scope: PerAccount, Flag: "api-budget", Default: "0.5", Meaning: "the share of the token's hourly rate limit (x-ratelimit-limit) usersync may use, in (0, 1]; the rest is left to the token owner's other tools. usersync never lets x-ratelimit-remaining fall below (1 - share) x limit: it waits for the reset (the worker snoozes its job; a command waits up to a minute, then exits 1 saying when the budget resets). Without a readable x-ratelimit-limit the floor is kept from the limit last seen, else the API's documented 10,000; without a readable x-ratelimit-reset the window is taken to end an hour after usersync's first reading of it.",
			set: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || !(f > 0 && f <= 1) {
					return fmt.Errorf("must be a share above 0 and at most 1 (like 0.5), not %q", v)
				}
				c.APIBudget = f
				return nil
			}},
		{Env: "USERSYNC_MAX_RESPONSE_BYTES", Scope: FleetWide, Flag: "max-response-bytes", Default: "64MiB", Meaning: "largest API response body read, in bytes or with a KiB, MiB or GiB suffix; a larger one fails the request instead of filling memory.",
			set: func(c *Config, v string) error { return parseBytes(&c.MaxResponseBytes, v, 64<<10, 4<<30) }},
		{Env: "USERSYNC_MAX_RESPONSE_MEMORY", Scope: FleetWide, Flag: "max-response-memory", Meaning: "most memory the API response bodies read at once may take together, in one process: a worker's accounts share it (a sync fetches the users page and the dimension lists at once, and several accounts sync at once), in bytes or with a KiB, MiB or GiB suffix; at least USERSYNC_MAX_RESPONSE_BYTES, and twice it when unset. A body waits for room, or fails its attempt (retried) when waiting could not end.",
			Example: "128MiB",
			set: func(c *Config, v string) error {
				if v == "" {
					return nil // resolved by Load
				}
				return parseBytes(&c.MaxResponseMemory, v, 64<<10, 8<<30)
			}},
		{Env: "USERSYNC_MAX_FUTURE_SKEW", Scope: PerAccount, Flag: "max-future-skew", Default: "24h", Meaning: "how far ahead of this host's clock a record's updatedAt may be and still move the watermark; records dated further ahead are stored and counted but never move it.",
			set: func(c *Config, v string) error {
				return parseDuration(&c.MaxFutureSkew, v, time.Minute, 365*24*time.Hour)
			}},
		{Env: "USERSYNC_DATA_CONNECTIONS", Scope: FleetWide, Flag: "data-connections", Default: "true", Meaning: "ask for each user's connections to external systems (provideDataConnections) and keep them in users.data_connections; false leaves stored values alone.",
			set: func(c *Config, v string) error { return parseBool(&c.DataConnections, v) }},
		{Env: "USERSYNC_STRICT_CONFIG", Scope: FleetWide, Flag: "strict-config", Default: "false", Meaning: "refuse to start (exit 2) when the environment holds a USERSYNC_* variable that is not a setting, instead of warning of it.",
			set: func(c *Config, v string) error { return parseBool(&c.StrictConfig, v) }},
		{Env: "USERSYNC_LOG_LEVEL", Scope: FleetWide, Flag: "log-level", Default: "info", Meaning: "log level: debug, info, warn or error.",
			set: func(c *Config, v string) error { return parseEnum(&c.LogLevel, v, "debug", "info", "warn", "error") }},
		{Env: "USERSYNC_LOG_FORMAT", Scope: FleetWide, Flag: "log-format", Default: "auto", Meaning: "log format on stderr: json, text, or auto (json for the worker, text for other commands).",
			set: func(c *Config, v string) error { return parseEnum(&c.LogFormat, v, "auto", "text", "json") }},
		{Env: "USERSYNC_HTTP_ADDR", Scope: FleetWide, Flag: "http-addr", Default: "127.0.0.1:9090", Meaning: "address of the worker's HTTP server: /healthz, /readyz, /metrics and the job UI at /riverui/; off disables it.",
			Example: "0.0.0.0:9090",
			set:     func(c *Config, v string) error { c.HTTPAddr = v; return validateAddr(v) }},
		{Env: "USERSYNC_HTTP_HOSTS", Scope: FleetWide, Flag: "http-hosts", Meaning: "comma-separated host names (without port) the job UI answers to besides localhost and IP addresses, e.g. the name of a proxy in front of it. An unguarded UI refuses every other Host (421), which defeats DNS rebinding; a UI guarded by a token or basic auth checks the Host only when this is set.",
			Example: "jobs.example.internal",
			set:     func(c *Config, v string) error { return parseHosts(&c.HTTPHosts, v) }},
		{Env: "USERSYNC_HTTP_TOKEN", Scope: FleetWide, Meaning: "bearer token that guards the job UI (/riverui/): at least 16 characters, at least 5 of them different (openssl rand -hex 16 makes one); after 10 wrong tries the UI answers 429 to everyone until the failures slow to one a second. Also read from USERSYNC_HTTP_TOKEN_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.HTTPToken = v; return nil }},
		{Env: "USERSYNC_HTTP_BASIC_AUTH", Scope: FleetWide, Meaning: "user:password that guards the job UI (/riverui/) with basic auth; the password as strong as USERSYNC_HTTP_TOKEN, with the same limit on wrong tries. Also read from USERSYNC_HTTP_BASIC_AUTH_FILE.", Secret: true,
			set: func(c *Config, v string) error {
				if v != "" && !strings.Contains(v, ":") {
					return errors.New("must be user:password")
				}
				c.HTTPBasicAuth = v
				return nil
			}},
		{Env: "USERSYNC_SYNC_SCHEDULE", Scope: PerAccount, Flag: "sync-schedule", Default: "*/15 * * * *", Meaning: "when the worker runs incremental syncs: a cron expression (UTC unless CRON_TZ= is given), a descriptor like @every 15m, or off.",
			set: func(c *Config, v string) error { c.SyncSchedule = v; return checkSchedule(v) }},
		{Env: "USERSYNC_RECONCILE_SCHEDULE", Scope: PerAccount, Flag: "reconcile-schedule", Default: "0 3 * * *", Meaning: "when the worker runs reconciles (every id checked against the warehouse); a cron expression, descriptor, or off.",
			set: func(c *Config, v string) error { c.ReconcileSchedule = v; return checkSchedule(v) }},
		{Env: "USERSYNC_RECONCILE_MAX_DELETE", Scope: PerAccount, Flag: "reconcile-max-delete", Default: "0.05", Meaning: "the most a reconcile may mark deleted, as a share of the live users (0.05 = 5%); above it the reconcile stops and reports instead. Raise it for one run to accept a real bulk deletion.",
			set: func(c *Config, v string) error {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f <= 0 || f > 1 {
					return fmt.Errorf("must be a share between 0 and 1 (like 0.05), not %q", v)
				}
				c.ReconcileMaxDelete = f
				return nil
			}},
		{Env: "USERSYNC_RECONCILE_MEMBERSHIP", Scope: PerAccount, Flag: "reconcile-membership", Default: "auto", Meaning: "when a reconcile lists every team's members (one request or more per team): auto (only when the last sync received users without their team ids: an API that refuses include=teams), always, or never.",
			set: func(c *Config, v string) error {
				return parseEnum(&c.ReconcileMembership, v, "auto", "always", "never")
			}},
		{Env: "USERSYNC_RECONCILE_RESUME_WITHIN", Scope: PerAccount, Flag: "reconcile-resume-within", Default: "6h", Meaning: "how long after it began an interrupted reconcile's id walk (a restart, a lost database connection, a spent budget) is resumed by the next reconcile from the page after the last it recorded, instead of listing every id again; older walks start over, since a walk marks deleted only users missing from the part it walked after they were deleted. A duration from 1m to 7 days, or off.",
			set: func(c *Config, v string) error {
				if strings.TrimSpace(v) == "off" {
					c.ReconcileResumeWithin = -1
					return nil
				}
				return parseDuration(&c.ReconcileResumeWithin, v, time.Minute, 7*24*time.Hour)
			}},
		{Env: "USERSYNC_SNAPSHOT_SCHEDULE", Scope: PerAccount, Flag: "snapshot-schedule", Default: "@hourly", Meaning: "when the worker writes Parquet snapshots besides after each sync; a cron expression, descriptor, or off.",
			set: func(c *Config, v string) error { c.SnapshotSchedule = v; return checkSchedule(v) }},
		{Env: "USERSYNC_SCHEDULE_MIN_INTERVAL", Scope: FleetWide, Flag: "schedule-min-interval", Default: "1m", Meaning: "the shortest @every interval a schedule may have; lower it only for demos and tests (every run costs API requests).",
			set: func(c *Config, v string) error {
				return parseDuration(&c.ScheduleMinInterval, v, time.Second, 24*time.Hour)
			}},
		{Env: "USERSYNC_SNAPSHOT_AFTER_SYNC", Scope: PerAccount, Flag: "snapshot-after-sync", Default: "true", Meaning: "write a snapshot after each successful sync or backfill of the worker that changed something (a user, team, role or profile, or a membership), and after each reconcile. Even when false, a snapshot skipped because no run had completed (one was under way) is written after the next run that succeeds.",
			set: func(c *Config, v string) error { return parseBool(&c.SnapshotAfterSync, v) }},
		{Env: "USERSYNC_JOB_TIMEOUT", Scope: FleetWide, Flag: "job-timeout", Default: "6h", Meaning: "longest a snapshot may take (0 for no bound); a dead worker's snapshot job is rescued an hour after it. Syncs, backfills and reconciles are bounded by USERSYNC_TIME_SLICE instead, and resume from their checkpoint.",
			set: func(c *Config, v string) error { return parseDuration(&c.JobTimeout, v, 0, 7*24*time.Hour) }},
		{Env: "USERSYNC_LOCK_TIMEOUT", Scope: FleetWide, Flag: "lock-timeout", Default: "1m", Meaning: "longest any statement of usersync waits for a lock another session holds (an analyst's query or a script holding a table) before it fails (PostgreSQL's lock_timeout): a run fails and resumes at its next try, a command says so; usersync_database_lock_wait_seconds shows the wait meanwhile.",
			set: func(c *Config, v string) error { return parseDuration(&c.LockTimeout, v, time.Second, time.Hour) }},
		{Env: "USERSYNC_SHUTDOWN_TIMEOUT", Scope: FleetWide, Flag: "shutdown-timeout", Default: "10s", Meaning: "how long a stopping worker lets running jobs commit their page in flight before cancelling them; deploy grace periods must exceed it.",
			set: func(c *Config, v string) error { return parseDuration(&c.ShutdownTimeout, v, time.Second, time.Hour) }},
		{Env: "USERSYNC_TIME_SLICE", Scope: FleetWide, Flag: "time-slice", Default: "1m", Meaning: "longest a sync, backfill or reconcile runs in one go: past it the run stops, keeping the pages it committed, and its job resumes it at once behind the jobs that came due meanwhile (a reconcile's slice doubles at each resume, up to 8 slices). A dead worker's job (kill -9, OOM) is run again by River's stuck-job rescue within about this plus half of it (at most 30s) plus 30s.",
			set: func(c *Config, v string) error { return parseDuration(&c.TimeSlice, v, time.Second, time.Hour) }},
		{Env: "USERSYNC_WORKERS", Scope: FleetWide, Flag: "workers", Default: "2", Meaning: "incremental syncs a worker process runs at once, of any account (the queue default; backfills, reconciles and snapshots have slots of their own: USERSYNC_LONG_WORKERS, USERSYNC_SNAPSHOT_WORKERS). The runs of one account share its sync lock: a job that finds it held snoozes at once rather than wait in a slot.",
			set: func(c *Config, v string) error { return parseInt(&c.Workers, v, 1, 16) }},
	}
}

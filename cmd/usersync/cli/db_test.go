package cli

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/usersync/usersync/schema/schematest"
)

// TestPlaintextHost: a remote database reached with sslmode unset (pgx's
// prefer), disable, allow or prefer may be talked to in plaintext; TLS
// modes, loopback hosts and Unix sockets are fine.
func TestPlaintextHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn, want string
	}{
		{"postgres://u:pw@db.internal:5432/analytics", "db.internal"},
		{"postgres://u:pw@db.internal/analytics?sslmode=prefer", "db.internal"},
		{"postgres://u:pw@db.internal/analytics?sslmode=allow", "db.internal"},
		{"postgres://u:pw@10.1.2.3/analytics?sslmode=disable", "10.1.2.3"},
		{"postgres://u:pw@db.internal/analytics?sslmode=require", ""},
		{"postgres://u:pw@db.internal/analytics?sslmode=verify-full", ""},
		{"postgres://u:pw@db.internal/analytics?sslmode=verify-ca", ""},
		{"postgres://u:pw@127.0.0.1:5432/analytics", ""},
		{"postgres://u:pw@localhost/analytics?sslmode=disable", ""},
		{"postgres://u:pw@[::1]:5432/analytics", ""},
		{"postgres://u:pw@127.0.0.1,db2.internal/analytics", "db2.internal"},
		{"postgres://u:pw@db1.internal,db2.internal/analytics?sslmode=require", ""},
		{"host=db.internal user=u password='a b' dbname=analytics", "db.internal"},
		{"host=db.internal user=u sslmode=verify-full", ""},
		{"host=/var/run/postgresql user=u dbname=analytics", ""},
		{"host=/tmp user=u sslmode=disable", ""},
		{"postgres:///analytics?host=/var/run/postgresql", ""},
	}
	for _, tt := range tests {
		cfg, err := pgconn.ParseConfig(tt.dsn)
		if err != nil {
			t.Fatalf("%s: %v", tt.dsn, err)
		}
		if got := plaintextHost(cfg); got != tt.want {
			t.Errorf("plaintextHost(%s) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

// TestPlaintextWarning runs commands in-process: one whose DATABASE_URL
// names a remote host without sslmode logs one warning naming the host and
// not the password (the connection itself fails: nothing listens there);
// one with the test's loopback URL logs none.
func TestPlaintextWarning(t *testing.T) {
	t.Parallel()
	_, _, errs := run(t, map[string]string{"DATABASE_URL": "postgres://u:pw-s3cr3t@192.0.2.1:5432/analytics?connect_timeout=1"}, "migrate")
	if strings.Count(errs, "go unencrypted") != 1 || !strings.Contains(errs, "level=WARN") || !strings.Contains(errs, "host=192.0.2.1") {
		t.Errorf("remote without sslmode: stderr %q", errs)
	}
	if strings.Contains(errs, "s3cr3t") {
		t.Errorf("the password shows: %q", errs)
	}
	_, _, errs = run(t, map[string]string{"DATABASE_URL": "postgres://u:pw@192.0.2.1:5432/analytics?connect_timeout=1&sslmode=require"}, "migrate")
	if strings.Contains(errs, "go unencrypted") {
		t.Errorf("remote with sslmode=require: stderr %q", errs)
	}
	pool := schematest.NewPool(t, 2)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": schematest.NewSchemaName(t, pool), "USERSYNC_READER_ROLE": ""}
	if code, _, errs := run(t, env, "migrate"); code != ExitOK || strings.Contains(errs, "unencrypted") {
		t.Errorf("loopback: exit %d, stderr %q", code, errs)
	}
}

package config

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// TestPoolConfigTurnsJITOff: usersync's sessions run without JIT unless
// DATABASE_URL says otherwise.
func TestPoolConfigTurnsJITOff(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u:pw@127.0.0.1/analytics":        "off",
		"postgres://u:pw@127.0.0.1/analytics?jit=on": "on",
	} {
		pcfg, _, err := Config{DatabaseURL: dsn}.PoolConfig(4)
		if err != nil {
			t.Fatal(err)
		}
		if got := pcfg.ConnConfig.RuntimeParams["jit"]; got != want {
			t.Errorf("%s: jit %q, want %q", dsn, got, want)
		}
	}
}

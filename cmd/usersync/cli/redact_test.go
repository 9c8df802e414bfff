package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestDatabaseURLPasswordWithHashOrQuestionMark: a password with a raw '#'
// or '?' (which pgconn accepts as letters of the password) is never shown
// when the connection fails, by status or by the worker (which waits for
// its database, logging each try, until it is stopped).
func TestDatabaseURLPasswordWithHashOrQuestionMark(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://u:TOP#SECRET@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://u:TOP?SECRET@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&connect_timeout=2&password=TOP#SECRET",
		"host=127.0.0.1 port=1 user=u sslmode=disable connect_timeout=2 password=TOP#SECRET",
	} {
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil || !strings.Contains(cfg.Password, "SECRET") {
			t.Fatalf("%s: pgconn does not read the password the test means: %v", dsn, err)
		}
		code, out, errs := run(t, map[string]string{"DATABASE_URL": dsn}, "status")
		if code == ExitOK || !strings.Contains(errs, "connecting to the database") {
			t.Errorf("%s status: exit %d, stderr %q", dsn, code, errs)
		}
		if strings.Contains(out+errs, "SECRET") || strings.Contains(out+errs, "TOP") {
			t.Errorf("%s status: the password shows: %q", dsn, out+errs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		var wout, werrs bytes.Buffer
		code = Main(ctx, []string{"worker"}, environ(map[string]string{"DATABASE_URL": dsn, "USERSYNC_HTTP_ADDR": "off",
			"USERSYNC_API_URL": "http://127.0.0.1:1", "USERSYNC_API_TOKEN": "x"}), &wout, &werrs)
		cancel()
		if code != ExitOK || !strings.Contains(werrs.String(), "connecting to the database") {
			t.Errorf("%s worker: exit %d, stderr %q", dsn, code, werrs.String())
		}
		if strings.Contains(wout.String()+werrs.String(), "SECRET") || strings.Contains(wout.String()+werrs.String(), "TOP") {
			t.Errorf("%s worker: the password shows: %q", dsn, wout.String()+werrs.String())
		}
	}
}

// TestDatabaseURLParseErrorsHideThePassword: pgconn's own masking of a
// refused string leaves part of a password with an escaped quote or a raw
// '@' in view; the error usersync prints quotes none of it.
func TestDatabaseURLParseErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		`host=127.0.0.1 user=u password='s3cr3t\'tail s3cr3t' port=abc`,
		`host=127.0.0.1 user=u password=s3cr3t\ tail port=99999999`,
		`postgres://u:s3cr3t@tail@127.0.0.1:abc/db`,
		`host=127.0.0.1 password='a b c' sslmode=sometimes`,
	} {
		code, _, errs := run(t, map[string]string{"DATABASE_URL": dsn}, "migrate")
		if code != ExitUsage || !strings.Contains(errs, "DATABASE_URL is not a valid PostgreSQL URL") {
			t.Errorf("%s: exit %d, stderr %q", dsn, code, errs)
		}
		if strings.Contains(errs, "s3cr3t") || strings.Contains(errs, "tail") || strings.Contains(errs, "a b c") {
			t.Errorf("%s: the password shows: %q", dsn, errs)
		}
	}
}

package dsn

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestRedactDSN masks the password of connection strings in both forms,
// however it is quoted or escaped, and only the password: the message
// around it is left as it was, even when the password is one letter.
func TestRedactDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dsn      string
		password string // as pgconn reads it
		redacted string // Redact
	}{
		{"quoted with spaces", `host=db.internal user=alice password='a b c' dbname=analytics`, "a b c",
			`host=db.internal user=alice password=xxxxx dbname=analytics`},
		{"quoted with escaped quote and backslash", `password='it\'s a \\ test' host=db user=u`, `it's a \ test`,
			`password=xxxxx host=db user=u`},
		{"unquoted with escaped space", `host=db password=a\ b\\c user=u`, `a b\c`, `host=db password=xxxxx user=u`},
		{"spaces around =", `host=db password = 'p w' user=u`, "p w", `host=db password = xxxxx user=u`},
		{"one letter", `host=database user=alice password=a dbname=analytics`, "a",
			`host=database user=alice password=xxxxx dbname=analytics`},
		{"one letter quoted", `host=database password='a'`, "a", `host=database password=xxxxx`},
		{"url", "postgres://alice:s3cr3t@db:5432/analytics?sslmode=require", "s3cr3t",
			"postgres://alice:xxxxx@db:5432/analytics?sslmode=require"},
		{"url percent-encoded", "postgres://alice:p%40ss%2Fw%20rd@db/analytics", "p@ss/w rd", "postgres://alice:xxxxx@db/analytics"},
		{"url one letter", "postgresql://a:a@database/analytics", "a", "postgresql://a:xxxxx@database/analytics"},
		{"url query password", "postgres://db/analytics?user=alice&password=s3cr%21t&sslmode=require", "s3cr!t",
			"postgres://db/analytics?user=alice&password=xxxxx&sslmode=require"},
		{"no password", "host=db user=alice", "", "host=db user=alice"},
		// pgconn ends the userinfo at an '@' before the path only: a raw
		// '#' or '?' is a letter of the password, as is a '#' in the query.
		{"url raw # in password", "postgres://u:TOP#SECRET@host/db", "TOP#SECRET", "postgres://u:xxxxx@host/db"},
		{"url raw ? in password", "postgres://u:TOP?SECRET@host/db?sslmode=disable", "TOP?SECRET",
			"postgres://u:xxxxx@host/db?sslmode=disable"},
		{"url raw # and ? without path", "postgres://u:TOP#SE?CRET@host", "TOP#SE?CRET", "postgres://u:xxxxx@host"},
		{"url query # in password", "postgres://host/db?password=TOP#SECRET&sslmode=disable", "TOP#SECRET",
			"postgres://host/db?password=xxxxx&sslmode=disable"},
		{"url query + in password", "postgres://host/db?password=TOP+SECRET", "TOP+SECRET", "postgres://host/db?password=xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := pgconn.ParseConfig(tt.dsn)
			if err != nil {
				t.Fatalf("pgconn refuses the test's DSN: %v", err)
			}
			if tt.password != "" && cfg.Password != tt.password {
				t.Fatalf("pgconn reads password %q, the test says %q", cfg.Password, tt.password)
			}
			spans, ok := dsnSecrets(tt.dsn)
			got := ""
			if len(spans) > 0 {
				got = spans[0].value
			}
			if !ok || got != tt.password {
				t.Errorf("password read as %q (ok %t), want %q", got, ok, tt.password)
			}
			if got := Redact(tt.dsn); got != tt.redacted {
				t.Errorf("Redact = %q, want %q", got, tt.redacted)
			}
			// An error quoting the whole string, and text with the password's letters elsewhere.
			msg := "failed to connect to `" + tt.dsn + "`: server said: database analytics of alice is unavailable"
			want := "failed to connect to `" + tt.redacted + "`: server said: database analytics of alice is unavailable"
			if got := RedactErr(errors.New(msg), tt.dsn); got != want {
				t.Errorf("RedactErr:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestRedactErrPieces: a driver that quotes only part of the string, or the
// decoded password, is masked too; a string that cannot be read is
// replaced whole.
func TestRedactErrPieces(t *testing.T) {
	t.Parallel()
	tests := []struct{ dsn, msg, want string }{
		{`host=db password='a b c' port=x`, `bad setting password='a b c' here`, `bad setting password=xxxxx here`},
		{`host=db password='a'`, `saw password='a' and a cat`, `saw password=xxxxx and a cat`},
		{`host=db password=hunter22`, `the password hunter22 is wrong`, `the password xxxxx is wrong`},
		{"postgres://u:p%40ssw0rd@h/db", `parse "p%40ssw0rd" and p@ssw0rd`, `parse "xxxxx" and xxxxx`},
		{`host=db password='unterminated`, "x", "x"},
	}
	for _, tt := range tests {
		if got := RedactErr(errors.New(tt.msg), tt.dsn); got != tt.want {
			t.Errorf("RedactErr(%q, %q) = %q, want %q", tt.msg, tt.dsn, got, tt.want)
		}
	}
	if got := Redact(`host=db password='unterminated`); strings.Contains(got, "unterminated") {
		t.Errorf("an unreadable string is printed: %q", got)
	}
	// pgconn reads "pa" as the password and "ss@db" as the host; masking up to
	// the last '@', as net/url reads it, covers both readings.
	if got := Redact("postgres://alice:pa@ss@db/analytics"); got != "postgres://alice:xxxxx@db/analytics" {
		t.Errorf("raw @ in the password: %q", got)
	}
}

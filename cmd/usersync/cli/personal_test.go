package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
)

const piiTestKey = "pii-test-key-0123456789abcdefghijklmnop"

func piiEnv(c *cliEnv, extra map[string]string) map[string]string {
	env := map[string]string{"USERSYNC_PII_HASH": "email", "USERSYNC_PII_DROP": "phone_number", "USERSYNC_PII_KEY": piiTestKey,
		"USERSYNC_LOG_LEVEL": "debug", "USERSYNC_SNAPSHOT_DIR": "off"}
	for k, v := range c.env {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func piiHash(v string) string {
	m := hmac.New(sha256.New, []byte(piiTestKey))
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

// personalValues returns the simulator's emails and phone numbers.
func personalValues(t *testing.T, sim *apisim.Server) (emails, phones []string) {
	t.Helper()
	for _, u := range sim.Users() {
		if e, ok := u.Attributes["email"].(string); ok {
			emails = append(emails, e)
		}
		if p, ok := u.Attributes["phoneNumber"].(string); ok {
			phones = append(phones, p)
		}
	}
	if len(emails) < 100 || len(phones) < 50 {
		t.Fatalf("the simulator sent %d emails and %d phone numbers", len(emails), len(phones))
	}
	return emails, phones
}

// dumpSchema returns every row of every table of the schema as text (what
// pg_dump would write of them).
func dumpSchema(t *testing.T, c *cliEnv) string {
	t.Helper()
	ctx := context.Background()
	rows, err := c.store.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, c.store.Schema())
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("%d tables: %v", len(tables), err)
	}
	var b strings.Builder
	for _, table := range tables {
		q := fmt.Sprintf(`SELECT coalesce(string_agg(t::text, E'\n'), '') FROM %s.%s t`, pgx.Identifier{c.store.Schema()}.Sanitize(), pgx.Identifier{table}.Sanitize())
		var s string
		if err := c.store.Pool().QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		b.WriteString(s)
	}
	return b.String()
}

func assertNoneInClear(t *testing.T, where, text string, values []string) {
	t.Helper()
	for _, v := range values {
		if i := strings.Index(text, v); i >= 0 {
			t.Fatalf("%s holds %q in clear: …%s…", where, v, text[max(0, i-100):min(len(text), i+60)])
		}
	}
}

// TestPersonalDataNeverInClear syncs (full, then incremental) a simulator
// with schema drift and wrong-typed users under a policy hashing email and
// dropping phoneNumber, snapshots, and greps the whole database, the Parquet
// files and the debug logs for the simulator's emails and phone numbers.
func TestPersonalDataNeverInClear(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 22, Users: 800, Knobs: apisim.Knobs{SchemaDrift: true, WrongTypeRate: 0.05}})
	env := piiEnv(c, map[string]string{"USERSYNC_PII_DROP_UNKNOWN": "true", "USERSYNC_SNAPSHOT_COMPRESSION": "none"})
	var logs strings.Builder
	mustRun := func(args ...string) string {
		code, out, errs := run(t, env, args...)
		logs.WriteString(out + errs)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		return out
	}
	mustRun("sync", "--full")
	c.sim.UpdateUsers(40)
	mustRun("sync")
	dir := t.TempDir()
	mustRun("snapshot", "--out", dir)
	status := mustRun("status")
	if !strings.Contains(status, "hashed: email; dropped: phoneNumber; unknown attributes dropped; key id ") || strings.Contains(status, piiTestKey) {
		t.Errorf("status does not show the policy (or shows the key):\n%s", status)
	}
	if !strings.Contains(logs.String(), "level=DEBUG") {
		t.Fatal("the debug logs were not captured")
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.quarantine WHERE resource_type = 'user'`); n == 0 {
		t.Fatal("nothing was quarantined: the test proves nothing about quarantine")
	}
	emails, phones := personalValues(t, c.sim)
	dump := dumpSchema(t, c)
	var parquet strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			b, rerr := os.ReadFile(path)
			parquet.Write(b)
			return rerr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"the database": dump, "the snapshot": parquet.String(), "the output and logs": logs.String()} {
		assertNoneInClear(t, where, text, emails)
		assertNoneInClear(t, where, text, phones)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.user_versions WHERE raw <> '{}'`); n != 0 {
		t.Errorf("%d versions keep unknown attributes in raw", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE unknown_attributes <> '{}'`); n == 0 {
		t.Error("the unknown attributes were not counted as drift")
	}
	// The values are there, hashed: in the tables and the snapshot.
	u := c.sim.Users()[0]
	email := u.Attributes["email"].(string)
	if !strings.Contains(dump, piiHash(email)) || !strings.Contains(parquet.String(), piiHash(email)) {
		t.Errorf("user %d's hashed email is missing from the database or the snapshot", u.ID)
	}
	// Joins on the hashed email work across users and the history.
	joined := c.query(t, `SELECT count(*) FROM $schema.user_versions v JOIN $schema.users u ON u.email = v.email AND u.id = v.user_id`)
	if all := c.query(t, `SELECT count(*) FROM $schema.user_versions WHERE email IS NOT NULL`); joined != all || c.query(t, `SELECT count(*) FROM $schema.user_version_history`) == 0 {
		t.Errorf("%d versions joined on the hashed email, of %d", joined, all)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE email = $1`, piiHash(email)); n != 1 {
		t.Errorf("%d users found by the hash of user %d's email", n, u.ID)
	}
}

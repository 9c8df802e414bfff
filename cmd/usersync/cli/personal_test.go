package cli

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
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
	if n, want := checkSnapshotUsers(t, dir, c.sim), c.query(t, `SELECT count(*) FROM $schema.users`); int64(n) != want || n < 700 {
		t.Errorf("read %d users back from the snapshot, want %d", n, want)
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

// TestForget erases a user with history, a quarantined user and an unknown
// id in one command: no trace of their values is left in the history, the
// quarantine or their row, and each erasure is audited.
func TestForget(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 23, Users: 300, Knobs: apisim.Knobs{WrongTypeRate: 0.05}})
	env := piiEnv(c, nil)
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	ids := c.sim.UserIDs()
	a := ids[0]
	for range 2 {
		if err := c.sim.UpdateUser(a); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
			t.Fatal(errs)
		}
	}
	q := c.query(t, `SELECT min(resource_id::bigint) FROM $schema.quarantine WHERE resource_type = 'user'`)
	if c.query(t, `SELECT count(*) FROM $schema.user_version_history WHERE user_id = $1`, a) != 2 || q == 0 {
		t.Fatalf("user %d has no history or no user was quarantined", a)
	}
	truth, _ := c.sim.User(a)
	values := []string{piiHash(truth.Attributes["email"].(string)), truth.Attributes["firstName"].(string), truth.Attributes["lastName"].(string)}
	idFile := filepath.Join(t.TempDir(), "ids")
	if err := os.WriteFile(idFile, []byte(fmt.Sprintf("# erasure requests\n%d\n", q)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, env, "forget", "--user", fmt.Sprint(a), "--file", idFile, "--user", "999999999")
	if code != ExitOK {
		t.Fatalf("forget: exit %d: %s", code, errs)
	}
	for _, want := range []string{fmt.Sprintf("user %d: erased: 2 superseded versions and 0 quarantine records deleted", a),
		fmt.Sprintf("user %d: erased:", q), "user 999999999: not in the warehouse; nothing to erase"} {
		if !strings.Contains(out, want) {
			t.Errorf("forget's output lacks %q:\n%s", want, out)
		}
	}
	var trace string
	err := c.store.Pool().QueryRow(context.Background(), fmt.Sprintf(`SELECT
		(SELECT coalesce(string_agg(v::text, ''), '') FROM %[1]s.user_versions v WHERE user_id = $1) ||
		(SELECT coalesce(string_agg(q::text, ''), '') FROM %[1]s.quarantine q WHERE resource_id IN ($1::bigint::text, $2))`,
		pgx.Identifier{c.store.Schema()}.Sanitize()), a, fmt.Sprint(q)).Scan(&trace)
	if err != nil {
		t.Fatal(err)
	}
	assertNoneInClear(t, "the erased user's rows", trace, values)
	// Nothing derived from the erased values stays: the content hash is a
	// marker holding updated_at only, and identifiers are cleared too.
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = $1 AND substring(content_hash FROM 1 FOR 15) = 'usersync:erased'::bytea
		AND user_guid IS NULL AND scim_external_id IS NULL AND username IS NULL`, a); n != 1 {
		t.Errorf("user %d keeps a content hash or an identifier derived from the erased data", a)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.quarantine WHERE resource_type = 'user' AND resource_id = $1::bigint::text`, q); n != 0 {
		t.Errorf("%d quarantine records of user %d left", n, q)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.erasures WHERE (user_id = $1 AND found AND versions_deleted = 2 AND columns_cleared > 0)
		OR (user_id = $2 AND found AND quarantine_deleted > 0) OR (user_id = 999999999 AND NOT found)`, a, q); n != 3 {
		t.Errorf("%d of 3 erasures audited", n)
	}
	// An unchanged user is not rewritten by the next sync: the row stays
	// cleared.
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatalf("sync after forget: exit %d: %s", code, errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = $1 AND email IS NULL AND first_name IS NULL AND last_name IS NULL`, a); n != 1 {
		t.Errorf("user %d's row was refilled by the next sync", a)
	}
	// A user changed in the API since is written again.
	if err := c.sim.UpdateUser(a); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatalf("sync after a change: exit %d: %s", code, errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = $1 AND email IS NOT NULL AND substring(content_hash FROM 1 FOR 15) <> 'usersync:erased'::bytea`, a); n != 1 {
		t.Errorf("user %d, changed in the API after forget, was not written again", a)
	}
	if code, _, errs := run(t, env, "forget"); code != ExitUsage || !strings.Contains(errs, "--user ID or --file F") {
		t.Errorf("forget without ids: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, env, "forget", "--user", "ann@example.com"); code != ExitUsage || !strings.Contains(errs, "a user id is a positive whole number") {
		t.Errorf("forget with a bad id: exit %d: %s", code, errs)
	}
}

// TestReconcilePurgesLongDeleted: with USERSYNC_DELETED_RETENTION=90d a
// reconcile removes the users marked deleted more than 90 days ago, with
// their history, and only them.
func TestReconcilePurgesLongDeleted(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 24, Users: 200})
	env := piiEnv(c, map[string]string{"USERSYNC_DELETED_RETENTION": "90d"})
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	ids := c.sim.UserIDs()
	old, recent := ids[:3], ids[3:5]
	for _, id := range append(append([]int64{}, old...), recent...) {
		if err := c.sim.UpdateUser(id); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	for _, id := range append(append([]int64{}, old...), recent...) {
		if err := c.sim.DeleteUser(id); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs := run(t, env, "reconcile"); code != ExitOK || strings.Contains(out, "purged") {
		t.Fatalf("reconcile: exit %d (purged nothing yet?): %s%s", code, out, errs)
	}
	c.query(t, `WITH u AS (UPDATE $schema.users SET deleted_at = now() - interval '91 days' WHERE id = ANY($1) RETURNING 1) SELECT count(*) FROM u`, old)
	c.query(t, `WITH u AS (UPDATE $schema.users SET deleted_at = now() - interval '89 days' WHERE id = ANY($1) RETURNING 1) SELECT count(*) FROM u`, recent)
	code, out, errs := run(t, env, "reconcile")
	if code != ExitOK || !strings.Contains(out, "purged       3 users deleted longer ago than USERSYNC_DELETED_RETENTION (3 versions)") {
		t.Fatalf("reconcile: exit %d: %s%s", code, out, errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = ANY($1)`, old); n != 0 {
		t.Errorf("%d users deleted 91 days ago left", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.user_versions WHERE user_id = ANY($1)`, old); n != 0 {
		t.Errorf("%d versions of purged users left", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.user_team_versions WHERE user_id = ANY($1)`, old); n != 0 {
		t.Errorf("%d membership versions of purged users left", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = ANY($1) AND deleted_at IS NOT NULL`, recent); n != 2 {
		t.Errorf("%d of the 2 users deleted 89 days ago kept", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE deleted_at IS NULL`); n != int64(len(ids)-5) {
		t.Errorf("%d live users, want %d", n, len(ids)-5)
	}
}

// TestPolicyChangeAndPIIApply: a warehouse written without a policy gets
// one; usersync pii apply,
// killed with SIGKILL after its first batches and run again, converts the
// users, their history and their quarantine exactly as one run would (every
// email the HMAC of the simulator's, hashed once); a second apply rewrites
// nothing; a full sync after it makes no version.
func TestPolicyChangeAndPIIApply(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 25, Users: 1500, Knobs: apisim.Knobs{WrongTypeRate: 0.03}})
	plain := piiEnv(c, map[string]string{"USERSYNC_PII_HASH": "", "USERSYNC_PII_DROP": "", "USERSYNC_PII_KEY": ""})
	env := piiEnv(c, nil)
	if code, _, errs := run(t, plain, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	c.sim.UpdateUsers(300)
	if code, _, errs := run(t, plain, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	snapshots := t.TempDir()
	if code, _, errs := run(t, plain, "snapshot", "--out", snapshots); code != ExitOK {
		t.Fatal(errs)
	}
	env["USERSYNC_SNAPSHOT_DIR"] = snapshots
	versions := `SELECT count(*) + (SELECT sum(version_id) FROM $schema.users) FROM $schema.user_version_history`
	before := c.query(t, versions)
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	if after := c.query(t, versions); after != before {
		t.Fatalf("changing the policy made versions of unchanged users (%d, then %d)", before, after)
	}
	// The sync read users again (its overlap) and converted them in place;
	// the others wait for pii apply.
	hashedEmails := `SELECT count(*) FROM $schema.users WHERE email ~ '^[0-9a-f]{64}$'`
	if n, all := c.query(t, hashedEmails), c.query(t, `SELECT count(*) FROM $schema.users WHERE email IS NOT NULL`); n == 0 || n == all {
		t.Fatalf("the sync under the new policy converted %d of %d users", n, all)
	}
	if _, out, _ := run(t, env, "status"); !strings.Contains(out, `rows were also written under "none`) {
		t.Errorf("status does not say rows were written under another policy:\n%s", out)
	}

	// Killed after its first batches, pii apply leaves its progress behind.
	cmd := exec.Command(binary(t), "pii", "apply", "--batch", "10")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.Contains(lines.Text(), "rows rewritten in all") {
	}
	_ = cmd.Process.Kill() // SIGKILL
	_ = cmd.Wait()
	if n := c.query(t, `SELECT count(*) FROM $schema.pii_apply WHERE finished_at IS NULL AND rewritten > 0`); n != 1 {
		t.Fatalf("no stopped apply recorded (did it finish before the kill?): %s", stderr.String())
	}
	code, out, errs := run(t, env, "pii", "apply", "--batch", "100")
	if code != ExitOK || !strings.Contains(out, "resumed a stopped apply") || !strings.Contains(out, "done: ") {
		t.Fatalf("pii apply: exit %d: %s%s", code, out, errs)
	}
	checkConverted(t, c)
	if !strings.Contains(out, "was written under an older policy: none") {
		t.Errorf("pii apply does not list the snapshot written without a policy:\n%s", out)
	}
	if n := c.query(t, `SELECT count(*) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'phone_number'
		AND col_description(attrelid, attnum) LIKE '%dropped by the personal-data policy%'`, c.store.Schema()+".users"); n != 1 {
		t.Error("the comment of users.phone_number does not say it is dropped")
	}
	if code, out, _ = run(t, env, "pii", "apply"); code != ExitOK || !strings.Contains(out, "done: 0 rows rewritten") {
		t.Errorf("a second pii apply rewrote rows: %s", out)
	}
	if _, out, _ := run(t, env, "status"); strings.Contains(out, "rows were also written under") {
		t.Errorf("status still asks for pii apply:\n%s", out)
	}
	// pii apply hashed every row it rewrote again: a full sync, which
	// reads every user, finds them unchanged.
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK || c.query(t, versions) != before {
		t.Fatalf("a sync after pii apply made versions: %s", errs)
	}
	// A new key: users read again take the new key's hash in place.
	rotated := piiEnv(c, map[string]string{"USERSYNC_PII_KEY": "another-pii-test-key-0123456789abcdefgh"})
	if code, _, errs := run(t, rotated, "sync", "--full"); code != ExitOK || c.query(t, versions) != before {
		t.Fatalf("a sync under a new key made versions: %s", errs)
	}
	m := hmac.New(sha256.New, []byte(rotated["USERSYNC_PII_KEY"]))
	u := c.sim.Users()[0]
	m.Write([]byte(u.Attributes["email"].(string)))
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE id = $1 AND email = $2`, u.ID, hex.EncodeToString(m.Sum(nil))); n != 1 {
		t.Errorf("user %d's email is not hashed under the new key", u.ID)
	}
}

// TestContentHashIsOfTheStoredRow: the content hash a sync writes is the one
// usersync migrate computes from the stored row (users and their history,
// under a policy, with schema drift, data connections and to-one ids), so
// the upgrade of migration 0008 (hashes of the attributes as sent replaced
// by hashes of the stored rows) changes nothing of a warehouse written with
// the new hash, and on a warehouse holding old hashes it makes no version:
// a full sync after it finds every user unchanged.
func TestContentHashIsOfTheStoredRow(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 26, Users: 700, Knobs: apisim.Knobs{SchemaDrift: true}})
	env := piiEnv(c, nil)
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	c.sim.UpdateUsers(200)
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	hashes := `SELECT md5(string_agg(encode(content_hash, 'hex'), ',' ORDER BY id, valid_from)) FROM (
		SELECT id, content_hash, version_valid_from AS valid_from FROM $schema.users
		UNION ALL SELECT user_id, content_hash, valid_from FROM $schema.user_version_history) h`
	versions := `SELECT count(*) FROM $schema.user_version_history`
	var want string
	pool := c.store.Pool()
	schemaSQL := pgx.Identifier{c.store.Schema()}.Sanitize()
	if err := pool.QueryRow(context.Background(), strings.ReplaceAll(hashes, "$schema", schemaSQL)).Scan(&want); err != nil {
		t.Fatal(err)
	}
	nv := c.query(t, versions)
	if nv < 100 {
		t.Fatalf("%d versions: the simulator's updates made too few", nv)
	}
	rehash := func() {
		t.Helper()
		c.query(t, `WITH r AS (UPDATE $schema.content_rehash SET last_key = 0, finished_at = NULL RETURNING 1) SELECT count(*) FROM r`)
		if code, _, errs := run(t, env, "migrate"); code != ExitOK {
			t.Fatal(errs)
		}
		var got string
		if err := pool.QueryRow(context.Background(), strings.ReplaceAll(hashes, "$schema", schemaSQL)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatal("usersync migrate computed other content hashes than the sync stored")
		}
	}
	rehash()
	// A warehouse of the old hash: every row's hash replaced.
	c.query(t, `WITH r AS (UPDATE $schema.users SET content_hash = sha256(id::text::bytea) RETURNING 1) SELECT count(*) FROM r`)
	c.query(t, `WITH r AS (UPDATE $schema.user_version_history SET content_hash = sha256(version_id::text::bytea) RETURNING 1) SELECT count(*) FROM r`)
	rehash()
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK || c.query(t, versions) != nv {
		t.Fatalf("a full sync after the upgrade made versions (%d, then %d): %s", nv, c.query(t, versions), errs)
	}
}

// checkConverted checks every stored email is the HMAC of the simulator's,
// no phone number is kept, and neither is in clear anywhere.
func checkConverted(t *testing.T, c *cliEnv) {
	t.Helper()
	emails, phones := personalValues(t, c.sim)
	dump := dumpSchema(t, c)
	assertNoneInClear(t, "the converted database", dump, emails)
	assertNoneInClear(t, "the converted database", dump, phones)
	want := map[string]bool{}
	for _, e := range emails {
		want[piiHash(e)] = true
	}
	rows, err := c.store.Pool().Query(context.Background(), fmt.Sprintf(`SELECT email FROM %s.user_versions WHERE email IS NOT NULL
		UNION ALL SELECT raw->'attributes'->>'email' FROM %[1]s.quarantine WHERE raw->'attributes'->>'email' IS NOT NULL`, pgx.Identifier{c.store.Schema()}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(got) < len(emails) {
		t.Fatalf("%d emails stored: %v", len(got), err)
	}
	for _, e := range got {
		if !want[e] {
			t.Fatalf("stored email %q is not the HMAC of a simulator email (hashed twice?)", e)
		}
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.user_versions WHERE phone_number IS NOT NULL`); n != 0 {
		t.Errorf("%d versions keep a phone number", n)
	}
}

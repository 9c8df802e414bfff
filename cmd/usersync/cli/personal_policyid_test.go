package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/apisim"
)

// hashShapedEmails returns the simulator's emails of 64 lower-case hex
// digits (the HashShapedEmailEvery knob) and the ids of their users.
func hashShapedEmails(t *testing.T, sim *apisim.Server) (emails []string, ids []int64) {
	t.Helper()
	for _, u := range sim.Users() {
		e, _ := u.Attributes["email"].(string)
		if len(e) == 64 && strings.Trim(e, "0123456789abcdef") == "" {
			emails, ids = append(emails, e), append(ids, u.ID)
		}
	}
	if len(emails) < 20 {
		t.Fatalf("the simulator sent %d emails shaped like hashes", len(emails))
	}
	return emails, ids
}

// storedEmails returns every email stored in users, their history and the
// users' quarantine records.
func storedEmails(t *testing.T, c *cliEnv) []string {
	t.Helper()
	rows, err := c.store.Pool().Query(context.Background(), fmt.Sprintf(`SELECT email FROM %[1]s.users WHERE email IS NOT NULL
		UNION ALL SELECT email FROM %[1]s.user_version_history WHERE email IS NOT NULL
		UNION ALL SELECT raw->'attributes'->>'email' FROM %[1]s.quarantine WHERE raw->'attributes'->>'email' IS NOT NULL`,
		pgx.Identifier{c.store.Schema()}.Sanitize()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// assertEmailsHashedOnce checks every stored email is hash(e) of a
// simulator email e: not in clear, not hashed twice, not under another key.
func assertEmailsHashedOnce(t *testing.T, c *cliEnv, hash func(string) string) {
	t.Helper()
	emails, _ := personalValues(t, c.sim)
	want := map[string]bool{}
	for _, e := range emails {
		want[hash(e)] = true
	}
	got := storedEmails(t, c)
	if len(got) < len(emails) {
		t.Fatalf("%d emails stored for the simulator's %d", len(got), len(emails))
	}
	for _, e := range got {
		if !want[e] {
			t.Fatalf("stored email %q is not the HMAC of a simulator email (kept in clear, or hashed twice?)", e)
		}
	}
}

// TestHashShapedValuesAreHashed: a user whose email (a hashed attribute) is
// 64 lower-case hex digits from the API is stored hashed like any other, in
// users, the history, the quarantine and the snapshot (it was kept in
// clear, taken for a hash); every row records the policy it was written
// under.
func TestHashShapedValuesAreHashed(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 37, Users: 600, Knobs: apisim.Knobs{HashShapedEmailEvery: 7, WrongTypeRate: 0.1}})
	env := piiEnv(c, nil)
	if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	hexEmails, hexIDs := hashShapedEmails(t, c.sim)
	for _, id := range hexIDs[:10] {
		if err := c.sim.UpdateUser(id); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	dir := t.TempDir()
	if code, _, errs := run(t, env, "snapshot", "--out", dir); code != ExitOK {
		t.Fatal(errs)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.user_version_history WHERE user_id = ANY($1)`, hexIDs); n < 5 {
		t.Fatalf("%d versions of users with a hash-shaped email: the test proves nothing about the history", n)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.quarantine WHERE resource_type = 'user' AND resource_id::bigint = ANY($1)`, hexIDs); n == 0 {
		t.Fatal("no user with a hash-shaped email was quarantined: the test proves nothing about the quarantine")
	}
	assertNoneInClear(t, "the database", dumpSchema(t, c), hexEmails)
	assertEmailsHashedOnce(t, c, piiHash)
	checkSnapshotUsers(t, dir, c.sim)

	policy := c.query(t, `SELECT policy_id FROM $schema.pii_policies WHERE key_id IS NOT NULL`)
	for _, q := range []string{`SELECT count(*) FROM $schema.users WHERE pii_policy_id IS DISTINCT FROM $1`,
		`SELECT count(*) FROM $schema.user_version_history WHERE pii_policy_id IS DISTINCT FROM $1`,
		`SELECT count(*) FROM $schema.quarantine WHERE resource_type = 'user' AND pii_policy_id IS DISTINCT FROM $1`} {
		if n := c.query(t, q, policy); n != 0 {
			t.Errorf("%s: %d rows not recorded as written under policy %d", q, n, policy)
		}
	}
}

// TestPIIApplyFollowsEachRowsPolicy: on a warehouse holding rows written
// without a policy (hash-shaped emails among them) and rows written under a
// policy hashing email, pii apply hashes exactly the emails of the rows
// whose policy did not hash them, never one twice, and a hash-shaped email
// in clear is hashed. After a key rotation, pii apply leaves the emails
// hashed under the old key as they were and says how many.
func TestPIIApplyFollowsEachRowsPolicy(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 38, Users: 600, Knobs: apisim.Knobs{HashShapedEmailEvery: 7, WrongTypeRate: 0.05}})
	plain := piiEnv(c, map[string]string{"USERSYNC_PII_HASH": "", "USERSYNC_PII_DROP": "", "USERSYNC_PII_KEY": ""})
	env := piiEnv(c, nil)
	if code, _, errs := run(t, plain, "sync", "--full"); code != ExitOK {
		t.Fatal(errs)
	}
	hexEmails, hexIDs := hashShapedEmails(t, c.sim)
	// A third of the users (some with hash-shaped emails) change and are
	// written under the policy; the others stay as written without one.
	updated := append(c.sim.UpdateUsers(150), hexIDs[:5]...)
	for _, id := range hexIDs[:5] {
		if err := c.sim.UpdateUser(id); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errs := run(t, env, "sync"); code != ExitOK {
		t.Fatal(errs)
	}
	under := func(policy string) int64 {
		return c.query(t, `SELECT count(*) FROM $schema.users u JOIN $schema.pii_policies p ON p.policy_id = u.pii_policy_id WHERE p.fingerprint LIKE $1`, policy+"%")
	}
	if n, m := under("hash=email"), under("none"); n < int64(len(updated))/2 || m < 300 {
		t.Fatalf("%d users under the policy, %d without: want both", n, m)
	}
	if n := c.query(t, `SELECT count(*) FROM $schema.users WHERE email = ANY($1)`, hexEmails); n < int64(len(hexEmails))/2 {
		t.Fatalf("%d hash-shaped emails in clear before pii apply: the test proves nothing", n)
	}
	code, out, errs := run(t, env, "pii", "apply", "--batch", "50")
	if code != ExitOK {
		t.Fatalf("pii apply: exit %d: %s%s", code, out, errs)
	}
	assertNoneInClear(t, "the database after pii apply", dumpSchema(t, c), hexEmails)
	assertEmailsHashedOnce(t, c, piiHash)
	if n := c.query(t, `SELECT count(*) FROM $schema.users u JOIN $schema.pii_policies p ON p.policy_id = u.pii_policy_id
		WHERE p.fingerprint = 'none'`); n != 0 {
		t.Errorf("%d users still recorded as written without a policy after pii apply", n)
	}
	if code, out, _ := run(t, env, "pii", "apply"); code != ExitOK || !strings.Contains(out, "done: 0 rows rewritten") {
		t.Errorf("a second pii apply rewrote rows: %s", out)
	}

	// A new key: the hashes under the old one cannot be re-keyed.
	rotated := piiEnv(c, map[string]string{"USERSYNC_PII_KEY": piiTestKey + "-rotated"})
	stored := int64(len(storedEmails(t, c)))
	code, out, errs = run(t, rotated, "pii", "apply")
	want := fmt.Sprintf("%d values were hashed under another key and are left as they were", stored)
	if code != ExitOK || !strings.Contains(out, want) || !strings.Contains(out, "done: 0 rows rewritten") {
		t.Fatalf("pii apply under a new key: exit %d, want %q: %s%s", code, want, out, errs)
	}
	assertEmailsHashedOnce(t, c, piiHash)
}

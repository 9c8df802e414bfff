package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/usersync/usersync/schema/schematest"
)

// TestAccountReaderRoles: a registered account's
// USERSYNC_READER_ROLE (accounts add --reader-role) is granted its schema,
// never the registry, another account's schema or the union views'; the
// fleet's reader role is granted the default account's schema and the union
// views, which run with the reader's rights (security_invoker) and hold only
// the accounts it may read: they serve it the default account's rows while
// it may not read eu's, and eu's too once it may and they are remade.
func TestAccountReaderRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRegistryFleet(t)
	fleetSchema := f.env["USERSYNC_SCHEMA"]
	fleetReader, euReader := fleetSchema+"_rd", fleetSchema+"_eurd"
	f.dropRolesAtCleanup(t, fleetReader, euReader)
	f.env["USERSYNC_READER_ROLE"] = fleetReader
	f.mustRun(t, "migrate")
	_, euURL := f.simulator(t, 6, 30)
	euSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "eu", "--api-url", euURL, "--schema", euSchema,
		"--api-token-file", f.secretFile(t, "eu.token", "eu-token"), "--reader-role", euReader)
	f.mustRun(t, "sync", "--account", "eu", "--full")
	f.mustRun(t, "sync", "--full")

	as := func(role, query string) (int, error) { return f.countAs(ctx, role, query) }
	users := func(schema string) string { return fmt.Sprintf(`SELECT count(*)::int FROM %q.users`, schema) }
	registry := fmt.Sprintf(`SELECT count(*)::int FROM %q.accounts`, fleetSchema+"_river")
	union := fleetSchema + "_all"
	for _, c := range []struct {
		role, what, query string
		rows              int // -1: refused
	}{
		{euReader, "its account's users", users(euSchema), 30},
		{euReader, "its account's OAuth tokens", fmt.Sprintf(`SELECT count(*)::int FROM %q.oauth_tokens`, euSchema), -1},
		{euReader, "the default account's users", users(fleetSchema), -1},
		{euReader, "the registry", registry, -1},
		{euReader, "the union views", users(union), -1},
		{fleetReader, "the default account's users", users(fleetSchema), 120},
		{fleetReader, "eu's users", users(euSchema), -1},
		{fleetReader, "the registry", registry, -1},
		{fleetReader, "the union views, which hold only the accounts it may read", users(union), 120},
	} {
		n, err := as(c.role, c.query)
		switch {
		case c.rows < 0 && !permissionDenied(err):
			t.Errorf("%s reading %s: %d rows, %v; want permission denied", c.role, c.what, n, err)
		case c.rows >= 0 && (err != nil || n != c.rows):
			t.Errorf("%s reading %s: %d rows, %v; want %d", c.role, c.what, n, err, c.rows)
		}
	}
	// Granted eu's reader role, the fleet's reads every account through the
	// views once they are remade; the registry stays refused.
	if _, err := f.pool.Exec(ctx, `GRANT "`+euReader+`" TO "`+fleetReader+`"`); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, "accounts", "views")
	if n, err := as(fleetReader, users(union)+` WHERE account = 'eu'`); err != nil || n != 30 {
		t.Errorf("the fleet's reader, granted eu's, reads %d of eu's users through the union views (%v), want 30", n, err)
	}
	if _, err := as(fleetReader, registry); !permissionDenied(err) {
		t.Errorf("the fleet's reader, granted eu's, reads the registry: %v", err)
	}
}

func permissionDenied(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// TestAccountReaderRoleChange: accounts set --reader-role grants the new
// role the account's tables and revokes the replaced one's (here the
// fleet's, which the account inherited), whose union views then leave the
// account out instead of refusing; usersync check names a role that reads
// the account's tables besides its reader role.
func TestAccountReaderRoleChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newRegistryFleet(t)
	fleetSchema := f.env["USERSYNC_SCHEMA"]
	fleetReader, oaReader := fleetSchema+"_rd", fleetSchema+"_oard"
	f.dropRolesAtCleanup(t, fleetReader, oaReader)
	f.env["USERSYNC_READER_ROLE"] = fleetReader
	f.mustRun(t, "migrate")
	_, oaURL := f.simulator(t, 7, 30)
	oaSchema := schematest.NewSchemaName(t, f.pool)
	f.mustRun(t, "accounts", "add", "oa", "--api-url", oaURL, "--schema", oaSchema,
		"--api-token-file", f.secretFile(t, "oa.token", "oa-token"))
	f.mustRun(t, "sync", "--account", "oa", "--full")
	f.mustRun(t, "sync", "--full")
	as := func(role, query string) (int, error) { return f.countAs(ctx, role, query) }
	oaUsers := fmt.Sprintf(`SELECT count(*)::int FROM %q.users`, oaSchema)
	unionUsers := fmt.Sprintf(`SELECT count(*)::int FROM %q.users WHERE account = 'oa'`, fleetSchema+"_all")
	if n, err := as(fleetReader, unionUsers); err != nil || n != 30 {
		t.Fatalf("before the change, the fleet's reader reads %d of oa's users through the union views (%v), want 30", n, err)
	}

	out := f.mustRun(t, "accounts", "set", "oa", "--reader-role", oaReader)
	if !strings.Contains(out, "role "+fleetReader+" may no longer read schema "+oaSchema) {
		t.Errorf("accounts set --reader-role: %s", out)
	}
	if _, err := as(fleetReader, oaUsers); !permissionDenied(err) {
		t.Errorf("the replaced reader role still reads oa's users: %v", err)
	}
	if n, err := as(fleetReader, unionUsers); err != nil || n != 0 {
		t.Errorf("the replaced reader role reads %d of oa's users through the union views (%v), want none and no refusal", n, err)
	}
	if n, err := as(oaReader, oaUsers); err != nil || n != 30 {
		t.Errorf("the new reader role reads %d of oa's users (%v), want 30", n, err)
	}
	check := func() string {
		_, out, _ := run(t, f.env, "check", "--account", "oa")
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "reader role:") {
				return l
			}
		}
		t.Fatalf("usersync check --account oa has no reader role line:\n%s", out)
		return ""
	}
	if l := check(); !strings.HasPrefix(l, "ok") {
		t.Errorf("check after the change: %s", l)
	}
	if _, err := f.pool.Exec(ctx, fmt.Sprintf(`GRANT SELECT (id) ON %q.users TO %q`, oaSchema, fleetReader)); err != nil {
		t.Fatal(err)
	}
	if l := check(); !strings.HasPrefix(l, "FAIL") || !strings.Contains(l, "so may "+fleetReader+" (users)") {
		t.Errorf("check with a column granted to another role: %s", l)
	}
}

// countAs runs query, which counts rows, as role (SET LOCAL ROLE).
func (f *registryFleet) countAs(ctx context.Context, role, query string) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE "`+role+`"`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, query).Scan(&n)
	})
	return n, err
}

// dropRolesAtCleanup drops roles, and what they own, when the test ends.
func (f *registryFleet) dropRolesAtCleanup(t *testing.T, roles ...string) {
	t.Cleanup(func() {
		for _, r := range roles {
			_, _ = f.pool.Exec(context.Background(), `DROP OWNED BY "`+r+`"`)
			_, _ = f.pool.Exec(context.Background(), `DROP ROLE IF EXISTS "`+r+`"`)
		}
	})
}

package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// unionMark starts the comment of a schema of union views: only such a
// schema is ever dropped.
const unionMark = "usersync union views:"

// unionComment is the rest of the comment; the stamps follow it.
const unionComment = " every account's analysts' tables, with an account column; remade by usersync migrate, " +
	"accounts add, remove and views, and by the worker's fleet tick when the accounts change."

var stampsPattern = regexp.MustCompile(`members:([0-9a-f]+) views:([0-9a-f]+)$`)

// ErrUnionNeedsPG15 says the server cannot run views with the reader's
// rights (security_invoker), so no union views are made.
var ErrUnionNeedsPG15 = errors.New("the union views need PostgreSQL 15 or later (security_invoker); none were made")

// UnionSchema is the schema of the union views of a fleet whose default
// schema is fleetSchema.
func UnionSchema(fleetSchema string) string { return fleetSchema + "_all" }

// Member is an account the union views unite.
type Member struct{ Name, Schema string }

type unionStatements struct {
	serverVersion, owner, columns, ours, dependents, createSchema, dropSchema, comment string
	member, empty, view, dropView, viewComment, roleExists, grantUsage, grantSelect    string
	lock, tryLock                                                                      string
}

func newUnionStatements() (unionStatements, error) {
	var q unionStatements
	st, err := sqlfile.Load(sqlFiles, "union", map[string]string{"union": sqlfile.Later, "view": sqlfile.Later,
		"body": sqlfile.Later, "role": sqlfile.Later, "text": sqlfile.Later,
		"account": sqlfile.Later, "columns": sqlfile.Later, "schema": sqlfile.Later, "table": sqlfile.Later})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("union", st, map[string]*string{"serverVersion": &q.serverVersion, "owner": &q.owner,
		"columns": &q.columns, "ours": &q.ours, "dependents": &q.dependents, "createSchema": &q.createSchema,
		"dropSchema": &q.dropSchema, "comment": &q.comment, "member": &q.member, "empty": &q.empty, "view": &q.view,
		"dropView": &q.dropView, "viewComment": &q.viewComment, "roleExists": &q.roleExists,
		"grantUsage": &q.grantUsage, "grantSelect": &q.grantSelect, "lock": &q.lock, "tryLock": &q.tryLock})
}

// Union is a fleet's union views, one per analysts' table, uniting the
// members' tables behind an account column. They are only remade when their
// stamps change, because each is a UNION ALL over every account and remaking
// all at each registration would cost N².
type Union struct {
	Schema     string
	ReaderRole string
	// Members lists the accounts to unite, the default one first. It is
	// read again once the views' lock is taken, so that a refresh sees
	// the registry as the refresh before it left it.
	Members func(ctx context.Context) ([]Member, error)
}

// RefreshUnion refreshes the views of a fixed list of members (Union.Refresh).
func RefreshUnion(ctx context.Context, pool *pgxpool.Pool, unionSchema, readerRole string, members []Member) error {
	u := Union{Schema: unionSchema, ReaderRole: readerRole, Members: func(context.Context) ([]Member, error) { return members, nil }}
	_, err := u.Refresh(ctx, pool)
	return err
}

// Refresh remakes the views unless they are the members' already, waiting
// for another refresh to end first; it says whether it changed them.
func (u Union) Refresh(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	return u.refresh(ctx, pool, false)
}

// RefreshIfStale is Refresh for the worker's fleet tick, which calls it
// every few seconds: it reads the members and the schema's comment, and
// goes on only when the members' stamp is not the one stored; it does not
// wait for another refresh (another replica's tick, an accounts command)
// and does nothing then.
func (u Union) RefreshIfStale(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	return u.refresh(ctx, pool, true)
}

func (u Union) refresh(ctx context.Context, pool *pgxpool.Pool, quick bool) (bool, error) {
	q, err := newUnionStatements()
	if err != nil {
		return false, err
	}
	members, err := u.Members(ctx)
	if err != nil {
		return false, err
	}
	st, err := readUnionState(ctx, pool, q, u.Schema)
	if err != nil {
		return false, err
	}
	if quick && (st.ours && st.members == membersStamp(u.ReaderRole, members) || !st.ours && len(members) < 2) {
		return false, nil
	}
	if len(members) >= 2 {
		if err := canUnite(ctx, pool, q, u.Schema, st); err != nil {
			return false, err
		}
	}
	changed := false
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		lock := q.lock
		if quick {
			lock = q.tryLock
		}
		var got bool
		if err := tx.QueryRow(ctx, lock, u.Schema).Scan(&got); err != nil {
			return fmt.Errorf("taking the union views' lock: %w", err)
		}
		if !got {
			return nil // another refresh runs: the next tick looks again
		}
		changed, err = u.remake(ctx, tx, q)
		return err
	})
	return changed, err
}

// unionState is what the views' schema's comment says.
type unionState struct {
	exists, ours   bool
	members, views string // the stamps stored; "" when none
}

func readUnionState(ctx context.Context, db DBTX, q unionStatements, unionSchema string) (unionState, error) {
	var st unionState
	var comment string
	err := db.QueryRow(ctx, q.owner, unionSchema).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading schema %s: %w", unionSchema, err)
	}
	st.exists, st.ours = true, strings.HasPrefix(comment, unionMark)
	if m := stampsPattern.FindStringSubmatch(comment); st.ours && m != nil {
		st.members, st.views = m[1], m[2]
	}
	return st, nil
}

// canUnite refuses a schema of the views' name that is not usersync's, and
// a server without security_invoker.
func canUnite(ctx context.Context, db DBTX, q unionStatements, unionSchema string, st unionState) error {
	if st.exists && !st.ours {
		return fmt.Errorf("schema %s exists and is not usersync's union views; rename or drop it", unionSchema)
	}
	var version int
	if err := db.QueryRow(ctx, q.serverVersion).Scan(&version); err != nil {
		return fmt.Errorf("reading the server's version: %w", err)
	}
	if version < 150000 {
		return ErrUnionNeedsPG15
	}
	return nil
}

// remake makes the views in tx, which holds the views' lock, from the
// members as they are now, unless the views stored are theirs already.
func (u Union) remake(ctx context.Context, tx pgx.Tx, q unionStatements) (bool, error) {
	members, err := u.Members(ctx)
	if err != nil {
		return false, err
	}
	st, err := readUnionState(ctx, tx, q, u.Schema)
	if err != nil {
		return false, err
	}
	d := ddl{tx: tx, q: q, schema: u.Schema}
	ms := membersStamp(u.ReaderRole, members)
	if len(members) < 2 {
		if !st.ours {
			return false, nil // nothing to unite, nothing of usersync's to drop
		}
		return true, d.dropAll(ctx, ms)
	}
	if err := canUnite(ctx, tx, q, u.Schema, st); err != nil {
		return false, err
	}
	role, err := existingRole(ctx, tx, q, u.ReaderRole)
	if err != nil {
		return false, err
	}
	have, err := memberColumns(ctx, tx, q, members, role)
	if err != nil {
		return false, err
	}
	old, err := d.ourViews(ctx)
	if err != nil {
		return false, err
	}
	views := unionViews(q, members, have, old)
	vs := viewsStamp(u.ReaderRole, views)
	if st.members == ms && st.views == vs {
		// Granted again all the same: a role created since is granted
		// by the next migrate, as before the stamps.
		return false, d.grant(ctx, role, views)
	}
	return true, d.make(ctx, views, old, ms, vs, role)
}

// existingRole is role when it exists, else "": a missing role is granted
// nothing (migrate says so already), and the views then hold every member.
func existingRole(ctx context.Context, db DBTX, q unionStatements, role string) (string, error) {
	if role == "" {
		return "", nil
	}
	var ok bool
	if err := db.QueryRow(ctx, q.roleExists, role).Scan(&ok); err != nil {
		return "", fmt.Errorf("looking for role %s: %w", role, err)
	}
	if !ok {
		return "", nil
	}
	return role, nil
}

// membersStamp identifies the members and the reader role.
func membersStamp(role string, members []Member) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", role)
	for _, m := range members {
		fmt.Fprintf(h, "%q %q\n", m.Name, m.Schema)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// viewsStamp identifies the views' text and the reader role; "replaced"
// tells views made in place from those an older usersync dropped and made.
func viewsStamp(role string, views map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "replaced %q\n", role)
	for _, t := range schema.Tables() {
		if body, ok := views[t.Name]; ok {
			fmt.Fprintf(h, "%s\n%s\n", t.Name, body)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

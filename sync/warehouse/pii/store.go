package pii

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// personalSQL holds the statements of sql/personal.sql, rendered for one
// schema and one personal-data policy.
type personalSQL struct {
	notePolicy, columnComments, policies, applied               string
	policyInUse                                                 string
	forgetCurrent, forgetHash, forgetVersions, forgetQuarantine string
	insertErasure, commentColumn                                string
	purgeDeleted, applyProgress, applyStart, applySave          string
	usersBatch, usersRewrite, versionsBatch, versionsRewrite    string
	quarantineBatch, quarantineRewrite, policyKeys              string
}

func newPersonalSQL(schemaName string, p *normalize.Policy) (personalSQL, error) {
	hashed, dropped := p.HashedColumns(), p.DroppedColumns()
	personal := []string{}
	for _, a := range schema.User().Attributes {
		c := a.Column()
		if a.Personal || slices.Contains(hashed, c) || slices.Contains(dropped, c) {
			personal = append(personal, schema.QuoteIdentifier(c))
		}
	}
	var hashAssign, dropAssign strings.Builder
	for i, c := range hashed {
		fmt.Fprintf(&hashAssign, "%s = n.vals::jsonb->>%d, ", schema.QuoteIdentifier(c), i)
	}
	dropAny := "false"
	if len(dropped) > 0 {
		dropAny = "(" + strings.Join(pgrow.QuoteAll(dropped), " IS NOT NULL OR ") + " IS NOT NULL)"
	}
	for _, c := range dropped {
		fmt.Fprintf(&dropAssign, "%s = NULL, ", schema.QuoteIdentifier(c))
	}
	st, err := sqlfile.Load(sqlFiles, "personal", map[string]string{
		"schema": schema.QuoteIdentifier(schemaName), "personal_columns": strings.Join(personal, ", "),
		"clear_personal": strings.Join(personal, " = NULL, ") + " = NULL",
		"hash_columns":   strings.Join(pgrow.QuoteAll(hashed), ", "), "drop_any": dropAny,
		"hash_assign": hashAssign.String(), "drop_assign": dropAssign.String(),
		"table": sqlfile.Later, "column": sqlfile.Later, "comment": sqlfile.Later, // see commentColumn
	})
	if err != nil {
		return personalSQL{}, err
	}
	var q personalSQL
	err = sqlfile.Assign("personal", st, map[string]*string{
		"notePolicy": &q.notePolicy, "policyInUse": &q.policyInUse, "columnComments": &q.columnComments, "commentColumn": &q.commentColumn, "policies": &q.policies, "applied": &q.applied,
		"forgetCurrent": &q.forgetCurrent, "forgetHash": &q.forgetHash, "forgetVersions": &q.forgetVersions, "forgetQuarantine": &q.forgetQuarantine,
		"insertErasure": &q.insertErasure, "purgeDeleted": &q.purgeDeleted, "applyProgress": &q.applyProgress,
		"applyStart": &q.applyStart, "applySave": &q.applySave, "usersBatch": &q.usersBatch, "usersRewrite": &q.usersRewrite,
		"versionsBatch": &q.versionsBatch, "versionsRewrite": &q.versionsRewrite,
		"quarantineBatch": &q.quarantineBatch, "quarantineRewrite": &q.quarantineRewrite,
		"policyKeys": &q.policyKeys,
	})
	return q, err
}

// Store is the personal data of one warehouse schema under one policy:
// the policies its rows were written under, forget and pii apply. Its
// statements are rendered once, for the policy.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	rehash pgrow.Rehash
	p      *normalize.Policy
	sql    personalSQL
}

// New returns the personal data of st's schema under policy p (nil for
// none).
func New(st *warehouse.Store, p *normalize.Policy) (*Store, error) {
	q, err := newPersonalSQL(st.Schema(), p)
	if err != nil {
		return nil, err
	}
	rehash, err := pgrow.NewRehash(st.Schema())
	if err != nil {
		return nil, err
	}
	return &Store{pool: st.Pool(), schema: st.Schema(), rehash: rehash, p: p, sql: q}, nil
}

// NotePolicy records that rows are being written under the policy (names
// and key id only) and brings the column comments in line with it (see
// CommentColumns), also when a warehouse goes back to a policy it was
// written under before. It returns the policy's id, which every row written
// under it holds (pii_policy_id: see warehouse.Checkpoint.PolicyID). A
// policy noted within the hour is only read: a sync every few seconds does
// not write its row each time.
func (pd *Store) NotePolicy(ctx context.Context) (int64, error) {
	p := pd.p
	// The policy in use and the comments in one round trip: one
	// transaction for what most runs only read.
	b := &pgx.Batch{}
	b.Queue(pd.sql.policyInUse, p.Fingerprint())
	b.Queue(pd.sql.columnComments, pd.schema)
	br := pd.pool.SendBatch(ctx, b)
	var id int64
	err := br.QueryRow().Scan(&id)
	current, cerr := readComments(br.Query())
	if berr := br.Close(); err == nil && berr != nil {
		err = berr
	}
	switch {
	case err == nil && cerr == nil:
		return id, pd.writeComments(ctx, current)
	case err == nil:
		return 0, cerr
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("reading the personal-data policy: %w", err)
	}
	hashed, dropped := p.Hashed(), p.Dropped()
	if hashed == nil {
		hashed = []string{}
	}
	if dropped == nil {
		dropped = []string{}
	}
	var keyID *string
	if id := p.KeyID(); id != "" {
		keyID = &id
	}
	if err := pd.pool.QueryRow(ctx, pd.sql.notePolicy, p.Fingerprint(), hashed, dropped, p.DropUnknown(), keyID).Scan(&id); err != nil {
		return 0, fmt.Errorf("recording the personal-data policy: %w", err)
	}
	return id, pd.CommentColumns(ctx)
}

// PolicyUse is a policy rows were written under.
type PolicyUse struct {
	Fingerprint string    `json:"fingerprint"`
	LastUsedAt  time.Time `json:"last_used_at"`
}

// PolicyState is what the warehouse knows of the policies it was written
// under: those used since the last pii apply that finished, and when the
// current policy was last applied in full (nil if never).
type PolicyState struct {
	Used    []PolicyUse `json:"written_under"`
	Applied *time.Time  `json:"applied_at,omitempty"`
}

// PolicyState reads the policies rows were written under.
func (pd *Store) PolicyState(ctx context.Context) (PolicyState, error) {
	var st PolicyState
	rows, err := pd.pool.Query(ctx, pd.sql.policies)
	if err != nil {
		return st, fmt.Errorf("reading personal-data policies: %w", err)
	}
	st.Used, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (PolicyUse, error) {
		var u PolicyUse
		return u, r.Scan(&u.Fingerprint, &u.LastUsedAt)
	})
	if err != nil {
		return st, fmt.Errorf("reading personal-data policies: %w", err)
	}
	err = pd.pool.QueryRow(ctx, pd.sql.applied, pd.p.Fingerprint()).Scan(&st.Applied)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return st, fmt.Errorf("reading pii apply's progress: %w", err)
	}
	return st, nil
}

// PurgeDeleted removes the users marked deleted before cutoff with their
// history, memberships and quarantine records, in one statement; it returns
// how many users and versions it removed.
func (pd *Store) PurgeDeleted(ctx context.Context, db warehouse.DBTX, cutoff time.Time) (users, versions int64, err error) {
	if err := db.QueryRow(ctx, pd.sql.purgeDeleted, cutoff).Scan(&users, &versions); err != nil {
		return 0, 0, fmt.Errorf("purging users deleted before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	return users, versions, nil
}

package warehouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// personalSQL holds the statements of sql/personal.sql, rendered for one
// schema and one personal-data policy.
type personalSQL struct {
	notePolicy, columnComments, policies, applied               string
	forgetCurrent, forgetHash, forgetVersions, forgetQuarantine string
	insertErasure                                               string
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
	})
	if err != nil {
		return personalSQL{}, err
	}
	var q personalSQL
	err = sqlfile.Assign("personal", st, map[string]*string{
		"notePolicy": &q.notePolicy, "columnComments": &q.columnComments, "policies": &q.policies, "applied": &q.applied,
		"forgetCurrent": &q.forgetCurrent, "forgetHash": &q.forgetHash, "forgetVersions": &q.forgetVersions, "forgetQuarantine": &q.forgetQuarantine,
		"insertErasure": &q.insertErasure, "purgeDeleted": &q.purgeDeleted, "applyProgress": &q.applyProgress,
		"applyStart": &q.applyStart, "applySave": &q.applySave, "usersBatch": &q.usersBatch, "usersRewrite": &q.usersRewrite,
		"versionsBatch": &q.versionsBatch, "versionsRewrite": &q.versionsRewrite,
		"quarantineBatch": &q.quarantineBatch, "quarantineRewrite": &q.quarantineRewrite,
		"policyKeys": &q.policyKeys,
	})
	return q, err
}

// Personal is the personal-data side of a Store under one policy: forget
// and pii apply. Its statements are rendered once, for the policy.
type Personal struct {
	s   *Store
	p   *normalize.Policy
	sql personalSQL
}

// Personal returns the Store's personal-data side under policy p (nil for
// none).
func (s *Store) Personal(p *normalize.Policy) (*Personal, error) {
	q, err := newPersonalSQL(s.schema, p)
	if err != nil {
		return nil, err
	}
	return &Personal{s: s, p: p, sql: q}, nil
}

// NotePolicy records that rows are being written under the policy (names
// and key id only) and brings the column comments in line with it (see
// CommentColumns), also when a warehouse goes back to a policy it was
// written under before. It returns the policy's id, which every row written
// under it holds (pii_policy_id: see Checkpoint.PolicyID).
func (pd *Personal) NotePolicy(ctx context.Context) (int64, error) {
	p := pd.p
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
	var id int64
	if err := pd.s.pool.QueryRow(ctx, pd.sql.notePolicy, p.Fingerprint(), hashed, dropped, p.DropUnknown(), keyID).Scan(&id); err != nil {
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
func (pd *Personal) PolicyState(ctx context.Context) (PolicyState, error) {
	var st PolicyState
	rows, err := pd.s.pool.Query(ctx, pd.sql.policies)
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
	err = pd.s.pool.QueryRow(ctx, pd.sql.applied, pd.p.Fingerprint()).Scan(&st.Applied)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return st, fmt.Errorf("reading pii apply's progress: %w", err)
	}
	return st, nil
}

// PurgeDeleted removes the users marked deleted before cutoff with their
// history, memberships and quarantine records, in one statement; it returns
// how many users and versions it removed.
func (pd *Personal) PurgeDeleted(ctx context.Context, db DBTX, cutoff time.Time) (users, versions int64, err error) {
	if err := db.QueryRow(ctx, pd.sql.purgeDeleted, cutoff).Scan(&users, &versions); err != nil {
		return 0, 0, fmt.Errorf("purging users deleted before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	return users, versions, nil
}

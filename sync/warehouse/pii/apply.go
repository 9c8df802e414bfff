package pii

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// The phases of pii apply, in order: the tables it rewrites.
const (
	phaseUsers      = "users"
	phaseVersions   = "user_version_history"
	phaseQuarantine = "quarantine"
	phaseDone       = "done"
)

// ApplyProgress is where a pii apply stands.
type ApplyProgress struct {
	Phase     string `json:"phase"`   // the table being rewritten, or done
	LastID    int64  `json:"last_id"` // the last id of the phase's table done
	Rewritten int64  `json:"rewritten"`
	// KeptOtherKey counts the values left as they were because their row's
	// policy hashed them under another key: a hash cannot be re-keyed.
	KeptOtherKey int64 `json:"kept_other_key"`
	Resumed      bool  `json:"resumed"` // it went on from a stopped apply
}

// Apply rewrites the users, their history and quarantine to the policy, a
// transaction per batch, resuming after the last committed one. Each row
// records its policy and gets the hash of what it now holds, so applying
// twice equals once and the next sync adds no version.
func (pd *Store) Apply(ctx context.Context, batch int, progress func(ApplyProgress)) (ApplyProgress, error) {
	id, err := pd.NotePolicy(ctx)
	if err != nil {
		return ApplyProgress{}, err
	}
	rp, err := pd.loadRowPolicies(ctx, id)
	if err != nil {
		return ApplyProgress{}, err
	}
	pr, err := pd.startApply(ctx)
	if err != nil {
		return pr, err
	}
	for pr.Phase != phaseDone {
		n, err := pd.applyBatch(ctx, rp, &pr, batch)
		if err != nil {
			return pr, fmt.Errorf("applying the personal-data policy to %s after id %d: %w", pr.Phase, pr.LastID, err)
		}
		if progress != nil && n > 0 {
			progress(pr)
		}
	}
	return pr, pd.CommentColumns(ctx)
}

// startApply resumes the apply of this policy that stopped, or starts one.
func (pd *Store) startApply(ctx context.Context) (ApplyProgress, error) {
	fp := pd.p.Fingerprint()
	var pr ApplyProgress
	var finished bool
	err := pd.pool.QueryRow(ctx, pd.sql.applyProgress, fp).Scan(&pr.Phase, &pr.LastID, &pr.Rewritten, &pr.KeptOtherKey, &finished)
	if err == nil && !finished {
		pr.Resumed = true
		return pr, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return pr, fmt.Errorf("reading pii apply's progress: %w", err)
	}
	if _, err := pd.pool.Exec(ctx, pd.sql.applyStart, fp); err != nil {
		return pr, fmt.Errorf("starting pii apply: %w", err)
	}
	return ApplyProgress{Phase: phaseUsers}, nil
}

// applyBatch rewrites the next batch of the current phase and saves the
// progress with it; it returns how many rows it read.
func (pd *Store) applyBatch(ctx context.Context, rp *rowPolicies, pr *ApplyProgress, batch int) (int, error) {
	next := *pr
	var b applied
	err := pgx.BeginFunc(ctx, pd.pool, func(tx pgx.Tx) error {
		var err error
		switch pr.Phase {
		case phaseUsers:
			b, err = pd.columnsBatch(ctx, tx, rp, pd.sql.usersBatch, pr.LastID, batch)
			if err == nil && len(b.ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.usersRewrite, b.ids, b.vals, pd.p.DropUnknown(), rp.current)
			}
			if err == nil {
				err = pgrow.RehashKeys(ctx, tx, pd.rehash.Users, b.ids)
			}
		case phaseVersions:
			b, err = pd.columnsBatch(ctx, tx, rp, pd.sql.versionsBatch, pr.LastID, batch)
			if err == nil && len(b.ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.versionsRewrite, b.ids, b.vals, pd.p.DropUnknown(), rp.current)
			}
			if err == nil {
				err = pgrow.RehashKeys(ctx, tx, pd.rehash.Versions, b.ids)
			}
		case phaseQuarantine:
			b, err = pd.quarantineBatch(ctx, tx, rp, pr.LastID, batch)
			if err == nil && len(b.ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.quarantineRewrite, b.ids, b.vals, rp.current)
			}
		}
		if err != nil {
			return err
		}
		next.LastID = b.last
		next.Rewritten += int64(len(b.ids))
		next.KeptOtherKey += b.kept
		if b.n < batch {
			next.Phase, next.LastID = nextPhase(pr.Phase), 0
		}
		_, err = tx.Exec(ctx, pd.sql.applySave, pd.p.Fingerprint(), next.Phase, next.LastID, next.Rewritten, next.KeptOtherKey)
		return err
	})
	if err == nil {
		*pr = next
	}
	return b.n, err
}

// applied is what a batch of pii apply read and rewrites: the ids that
// need rewriting with, for each, its new values (see columnsBatch and
// quarantineBatch); how many rows it read and the last id; how many values
// it left because their row's policy hashed them under another key.
type applied struct {
	ids  []int64
	vals []string
	n    int
	last int64
	kept int64
}

func nextPhase(phase string) string {
	switch phase {
	case phaseUsers:
		return phaseVersions
	case phaseVersions:
		return phaseQuarantine
	}
	return phaseDone
}

// columnsBatch reads a batch of users or versions and returns the ids that
// need rewriting with, for each, the JSON array of its hashed columns' new
// values: a value is hashed when the row's policy did not hash it (see
// rowPolicies.held).
func (pd *Store) columnsBatch(ctx context.Context, tx pgx.Tx, rp *rowPolicies, query string, after int64, batch int) (applied, error) {
	b := applied{last: after}
	rows, err := tx.Query(ctx, query, after, batch)
	if err != nil {
		return b, err
	}
	defer rows.Close()
	names := pd.p.Hashed() // in the order of the query's hashed columns
	for rows.Next() {
		var id int64
		var vals []*string
		var dropped, raw bool
		var policy *int64
		if err := rows.Scan(&id, &vals, &dropped, &raw, &policy); err != nil {
			return applied{last: after}, err
		}
		b.n, b.last = b.n+1, id
		need := dropped || (raw && pd.p.DropUnknown())
		for i, v := range vals {
			if v == nil {
				continue
			}
			switch rp.held(policy, names[i], *v) {
			case heldClear:
				h := pd.p.HashString(*v)
				vals[i], need = &h, true
			case heldOtherKey:
				b.kept++
			}
		}
		if need {
			j, _ := json.Marshal(vals) // strings and nulls: cannot fail
			b.ids, b.vals = append(b.ids, id), append(b.vals, string(j))
		}
	}
	return b, rows.Err()
}

// quarantineBatch reads a batch of users' quarantine records and returns
// those whose redaction changes them, redacted: an attribute the record's
// policy hashed is kept as it is (see rowPolicies.held).
func (pd *Store) quarantineBatch(ctx context.Context, tx pgx.Tx, rp *rowPolicies, after int64, batch int) (applied, error) {
	b := applied{last: after}
	rows, err := tx.Query(ctx, pd.sql.quarantineBatch, after, batch)
	if err != nil {
		return b, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var raw []byte
		var policy *int64
		if err := rows.Scan(&id, &raw, &policy); err != nil {
			return applied{last: after}, err
		}
		b.n, b.last = b.n+1, id
		red := pd.p.RedactStored(raw, func(name string, v gjson.Result) bool {
			h := rp.held(policy, name, v.Str) // Str is "" for a value that is not a string
			if h == heldOtherKey {
				b.kept++
			}
			return h != heldClear
		})
		var x, y bytes.Buffer
		if json.Compact(&x, raw) != nil || json.Compact(&y, red) != nil || !bytes.Equal(x.Bytes(), y.Bytes()) {
			b.ids, b.vals = append(b.ids, id), append(b.vals, string(red))
		}
	}
	return b, rows.Err()
}

// CommentColumns says in the column comments of users and
// user_version_history which columns the policy hashes or drops (and
// restores the catalog's comments of the others). It writes only the
// comments that differ: on a warehouse whose comments are right (a new one
// under no policy) it writes none.
func (pd *Store) CommentColumns(ctx context.Context) error {
	rows, err := pd.pool.Query(ctx, pd.sql.columnComments, pd.schema)
	current, err := readComments(rows, err)
	if err != nil {
		return err
	}
	return pd.writeComments(ctx, current)
}

// column is a column of a table.
type column struct{ table, name string }

// readComments reads the result of columnComments (rows and the error
// that came with them).
func readComments(rows pgx.Rows, err error) (map[column]string, error) {
	if err != nil {
		return nil, fmt.Errorf("reading the column comments: %w", err)
	}
	current := map[column]string{}
	var c column
	var comment string
	_, err = pgx.ForEachRow(rows, []any{&c.table, &c.name, &comment}, func() error {
		current[c] = comment
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the column comments: %w", err)
	}
	return current, nil
}

// writeComments writes the comments of CommentColumns that differ from
// current.
func (pd *Store) writeComments(ctx context.Context, current map[column]string) error {
	// The catalog's comment of each column; built once (schema.Tables
	// builds the whole catalog).
	users, _ := schema.TableNamed("users")
	meaning := make(map[string]string, len(users.Columns))
	for _, c := range users.Columns {
		meaning[c.Name] = c.Meaning
	}
	hashed, dropped := pd.p.Hashed(), pd.p.Dropped()
	b := &pgx.Batch{}
	for _, a := range schema.User().Attributes {
		want, ok := meaning[a.Column()]
		if !ok {
			want = a.Meaning
		}
		switch {
		case slices.Contains(hashed, a.Name):
			want += " [hashed by the personal-data policy: HMAC-SHA256 of the value, hex]"
		case slices.Contains(dropped, a.Name):
			want += " [dropped by the personal-data policy: always null]"
		}
		for _, table := range []string{"users", "user_version_history"} {
			if current[column{table, a.Column()}] == want {
				continue
			}
			b.Queue(sqlfile.Fill(pd.sql.commentColumn, map[string]string{"table": schema.QuoteIdentifier(table),
				"column": schema.QuoteIdentifier(a.Column()), "comment": schema.QuoteLiteral(want)}))
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := pd.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("commenting the policy's columns: %w", err)
	}
	return nil
}

package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
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
	Resumed   bool   `json:"resumed"` // it went on from a stopped apply
}

// Apply rewrites the users, their history and their quarantine records to
// the policy, batch ids at a time, one transaction a batch, each saving its
// progress in pii_apply: a stopped apply (kill -9 included) resumes after
// its last committed batch. It is idempotent: a value already hashed is
// left alone, so applying twice equals applying once. Each row rewritten
// gets the content hash of what it now holds (rehashKeys), so the next sync
// finds an unchanged user unchanged and adds no version. progress, when set,
// is called after each batch. The comments of the hashed and dropped
// columns say so once it is done.
func (pd *Personal) Apply(ctx context.Context, batch int, progress func(ApplyProgress)) (ApplyProgress, error) {
	if err := pd.NotePolicy(ctx); err != nil {
		return ApplyProgress{}, err
	}
	pr, err := pd.startApply(ctx)
	if err != nil {
		return pr, err
	}
	for pr.Phase != phaseDone {
		n, err := pd.applyBatch(ctx, &pr, batch)
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
func (pd *Personal) startApply(ctx context.Context) (ApplyProgress, error) {
	fp := pd.p.Fingerprint()
	var pr ApplyProgress
	var finished bool
	err := pd.s.pool.QueryRow(ctx, pd.sql.applyProgress, fp).Scan(&pr.Phase, &pr.LastID, &pr.Rewritten, &finished)
	if err == nil && !finished {
		pr.Resumed = true
		return pr, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return pr, fmt.Errorf("reading pii apply's progress: %w", err)
	}
	if _, err := pd.s.pool.Exec(ctx, pd.sql.applyStart, fp); err != nil {
		return pr, fmt.Errorf("starting pii apply: %w", err)
	}
	return ApplyProgress{Phase: phaseUsers}, nil
}

// applyBatch rewrites the next batch of the current phase and saves the
// progress with it; it returns how many rows it read.
func (pd *Personal) applyBatch(ctx context.Context, pr *ApplyProgress, batch int) (int, error) {
	next := *pr
	var n int
	err := pgx.BeginFunc(ctx, pd.s.pool, func(tx pgx.Tx) error {
		var ids []int64
		var vals []string
		var err error
		switch pr.Phase {
		case phaseUsers:
			ids, vals, n, next.LastID, err = pd.columnsBatch(ctx, tx, pd.sql.usersBatch, pr.LastID, batch)
			if err == nil && len(ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.usersRewrite, ids, vals, pd.p.DropUnknown())
			}
			if err == nil {
				_, err = rehashKeys(ctx, tx, pd.s.rehash.users, ids)
			}
		case phaseVersions:
			ids, vals, n, next.LastID, err = pd.columnsBatch(ctx, tx, pd.sql.versionsBatch, pr.LastID, batch)
			if err == nil && len(ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.versionsRewrite, ids, vals, pd.p.DropUnknown())
			}
			if err == nil {
				_, err = rehashKeys(ctx, tx, pd.s.rehash.versions, ids)
			}
		case phaseQuarantine:
			ids, vals, n, next.LastID, err = pd.quarantineBatch(ctx, tx, pr.LastID, batch)
			if err == nil && len(ids) > 0 {
				_, err = tx.Exec(ctx, pd.sql.quarantineRewrite, ids, vals)
			}
		}
		if err != nil {
			return err
		}
		next.Rewritten += int64(len(ids))
		if n < batch {
			next.Phase, next.LastID = nextPhase(pr.Phase), 0
		}
		_, err = tx.Exec(ctx, pd.sql.applySave, pd.p.Fingerprint(), next.Phase, next.LastID, next.Rewritten)
		return err
	})
	if err == nil {
		*pr = next
	}
	return n, err
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
// values; then how many rows it read and the last id.
func (pd *Personal) columnsBatch(ctx context.Context, tx pgx.Tx, query string, after int64, batch int) ([]int64, []string, int, int64, error) {
	rows, err := tx.Query(ctx, query, after, batch)
	if err != nil {
		return nil, nil, 0, after, err
	}
	defer rows.Close()
	var ids []int64
	var out []string
	n, last := 0, after
	for rows.Next() {
		var id int64
		var vals []*string
		var dropped, raw bool
		if err := rows.Scan(&id, &vals, &dropped, &raw); err != nil {
			return nil, nil, 0, after, err
		}
		n, last = n+1, id
		need := dropped || (raw && pd.p.DropUnknown())
		for i, v := range vals {
			if v != nil && !normalize.IsHashed(*v) {
				h := pd.p.HashString(*v)
				vals[i], need = &h, true
			}
		}
		if need {
			b, _ := json.Marshal(vals) // strings and nulls: cannot fail
			ids, out = append(ids, id), append(out, string(b))
		}
	}
	return ids, out, n, last, rows.Err()
}

// quarantineBatch reads a batch of users' quarantine records and returns
// those whose redaction changes them, redacted.
func (pd *Personal) quarantineBatch(ctx context.Context, tx pgx.Tx, after int64, batch int) ([]int64, []string, int, int64, error) {
	rows, err := tx.Query(ctx, pd.sql.quarantineBatch, after, batch)
	if err != nil {
		return nil, nil, 0, after, err
	}
	defer rows.Close()
	var ids []int64
	var out []string
	n, last := 0, after
	for rows.Next() {
		var id int64
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, nil, 0, after, err
		}
		n, last = n+1, id
		red := pd.p.RedactResource(raw)
		var a, b bytes.Buffer
		if json.Compact(&a, raw) != nil || json.Compact(&b, red) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			ids, out = append(ids, id), append(out, string(red))
		}
	}
	return ids, out, n, last, rows.Err()
}

// CommentColumns says in the column comments of users and
// user_version_history which columns the policy hashes or drops (and
// restores the catalog's comments of the others). It writes only the
// comments that differ: on a warehouse whose comments are right (a new one
// under no policy) it writes none.
func (pd *Personal) CommentColumns(ctx context.Context) error {
	type column struct{ table, name string }
	current := map[column]string{}
	rows, err := pd.s.pool.Query(ctx, pd.sql.columnComments, pd.s.schema)
	if err != nil {
		return fmt.Errorf("reading the column comments: %w", err)
	}
	var c column
	var comment string
	_, err = pgx.ForEachRow(rows, []any{&c.table, &c.name, &comment}, func() error {
		current[c] = comment
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the column comments: %w", err)
	}
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
			b.Queue(fmt.Sprintf("COMMENT ON COLUMN %s.%s.%s IS %s", pd.s.q, schema.QuoteIdentifier(table),
				schema.QuoteIdentifier(a.Column()), quoteLiteral(want)))
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := pd.s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("commenting the policy's columns: %w", err)
	}
	return nil
}

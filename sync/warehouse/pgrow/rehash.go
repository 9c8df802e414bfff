package pgrow

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// rehashBatch is how many rows the upgrade of content hashes (migration
// 0008) rewrites per transaction.
const rehashBatch = 5000

// HashedTable is one table holding a content_hash: its statements to read
// rows (after a key, or of given keys) and to save new hashes.
type HashedTable struct {
	After, Of, Save string
}

// Rehash are the statements that compute content_hash again from what a
// row stores (sql/rehash.sql).
type Rehash struct {
	Users, Versions       HashedTable
	Pending, SaveProgress string
}

// NewRehash renders sql/rehash.sql for schemaName.
func NewRehash(schemaName string) (Rehash, error) {
	u := schema.User()
	var cols []string
	for _, a := range u.Attributes {
		c := schema.QuoteIdentifier(a.Column())
		if a.Type == schema.Object {
			c += "::text"
		}
		cols = append(cols, c)
	}
	cols = append(cols, "raw::text", "data_connections::text")
	for _, rel := range u.ToOne() {
		cols = append(cols, schema.QuoteIdentifier(rel.Column()))
	}
	st, err := sqlfile.Load(sqlFiles, "rehash", map[string]string{
		"schema": schema.QuoteIdentifier(schemaName), "content_columns": strings.Join(cols, ", "),
	})
	if err != nil {
		return Rehash{}, err
	}
	var q Rehash
	err = sqlfile.Assign("rehash", st, map[string]*string{
		"usersAfter": &q.Users.After, "usersOf": &q.Users.Of, "usersSave": &q.Users.Save,
		"versionsAfter": &q.Versions.After, "versionsOf": &q.Versions.Of, "versionsSave": &q.Versions.Save,
		"pending": &q.Pending, "saveProgress": &q.SaveProgress,
	})
	return q, err
}

// Table returns the statements of the Table named name.
func (q Rehash) Table(name string) HashedTable {
	if name == "users" {
		return q.Users
	}
	return q.Versions
}

// RehashKeys computes content_hash again for the rows of t with the given
// keys (ids of users, version ids of user_version_history) and saves those
// that differ.
func RehashKeys(ctx context.Context, tx pgx.Tx, t HashedTable, keys []int64) error {
	if len(keys) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, t.Of, keys)
	if err != nil {
		return fmt.Errorf("reading rows to hash: %w", err)
	}
	changed, _, _, err := storedHashes(rows)
	if err != nil {
		return err
	}
	return SaveHashes(ctx, tx, t, changed)
}

// rehashAfter does rehashKeys for the next batch of rows after key last; it
// returns the last key read and how many rows it read.
func rehashAfter(ctx context.Context, tx pgx.Tx, t HashedTable, last int64, batch int) (int64, int, error) {
	rows, err := tx.Query(ctx, t.After, last, batch)
	if err != nil {
		return last, 0, fmt.Errorf("reading rows to hash: %w", err)
	}
	changed, n, lastRead, err := storedHashes(rows)
	if err != nil {
		return last, 0, err
	}
	if n == 0 {
		lastRead = last
	}
	return lastRead, n, SaveHashes(ctx, tx, t, changed)
}

// Content is what a stored row's content hash covers, as the
// normalizer types it.
type Content struct {
	Key     int64 // id, or version_id
	Values  []any
	Raw, dc []byte
	toOne   []normalize.ToOne
	hash    []byte // the content_hash stored
	Erased  bool   // hash is normalize.ErasedHash
}

// Hash is normalize.ContentHash of the content.
func (c *Content) Hash() []byte {
	return normalize.ContentHash(c.Values, c.Raw, c.toOne, c.dc)
}

// ScanContent reads rows of (key, content columns..., content_hash), as
// rehash.sql selects them, calling fn for each.
func ScanContent(rows pgx.Rows, fn func(c *Content)) error {
	defer rows.Close()
	u := schema.User()
	attrs, toOnes := len(u.Attributes), len(u.ToOne())
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return fmt.Errorf("reading stored rows: %w", err)
		}
		c := Content{Key: v[0].(int64), Values: make([]any, attrs), toOne: make([]normalize.ToOne, toOnes)}
		for i, a := range u.Attributes {
			c.Values[i] = storedValue(a.Type, v[1+i])
		}
		c.Raw, c.dc = jsonText(v[1+attrs]), jsonText(v[2+attrs])
		for j := range c.toOne {
			if id, ok := v[3+attrs+j].(int64); ok {
				c.toOne[j] = normalize.ToOne{ID: id, Valid: true, Sent: true}
			}
		}
		c.hash, _ = v[3+attrs+toOnes].([]byte)
		_, c.Erased = normalize.ErasedAt(c.hash)
		fn(&c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading stored rows: %w", err)
	}
	return nil
}

// storedHashes reads rows as scanContent does and returns the keys whose
// hash differs from that of their content, with the new hashes (a row
// cleared by forget keeps its marker); then how many rows it read and the
// last key.
func storedHashes(rows pgx.Rows) (map[int64][]byte, int, int64, error) {
	changed := map[int64][]byte{}
	n, last := 0, int64(0)
	err := ScanContent(rows, func(c *Content) {
		n, last = n+1, c.Key
		if h := c.Hash(); !c.Erased && !bytes.Equal(h, c.hash) {
			changed[c.Key] = h
		}
	})
	return changed, n, last, err
}

// storedValue is a stored attribute as the normalizer types it: JSON (read
// as text) as bytes, timestamps in UTC.
func storedValue(t schema.JSONType, v any) any {
	switch x := v.(type) {
	case string:
		if t == schema.Object {
			return []byte(x)
		}
	case time.Time:
		return x.UTC()
	}
	return v
}

// jsonText is a JSON column read as text, nil when null.
func jsonText(v any) []byte {
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	return nil
}

// SaveHashes writes the content hashes of t's rows by key.
func SaveHashes(ctx context.Context, tx pgx.Tx, t HashedTable, changed map[int64][]byte) error {
	if len(changed) == 0 {
		return nil
	}
	keys := make([]int64, 0, len(changed))
	hashes := make([][]byte, 0, len(changed))
	for k, h := range changed {
		keys, hashes = append(keys, k), append(hashes, h)
	}
	if _, err := tx.Exec(ctx, t.Save, keys, hashes); err != nil {
		return fmt.Errorf("saving content hashes: %w", err)
	}
	return nil
}

// FinishRehash completes the upgrade of content hashes that migration 0008
// started: every table still listed as pending in content_rehash is
// rewritten after its last key done, rehashBatch rows a transaction, each
// saving its progress, so a stopped migrate resumes where it stopped.
func FinishRehash(ctx context.Context, db *pgxpool.Pool, schemaName string) error {
	q, err := NewRehash(schemaName)
	if err != nil {
		return err
	}
	rows, err := db.Query(ctx, q.Pending)
	if err != nil {
		return fmt.Errorf("reading the content hashes' upgrade: %w", err)
	}
	type pending struct {
		table string
		last  int64
	}
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pending, error) {
		var p pending
		return p, r.Scan(&p.table, &p.last)
	})
	if err != nil {
		return fmt.Errorf("reading the content hashes' upgrade: %w", err)
	}
	for _, p := range todo {
		for done := false; !done; {
			err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
				last, n, err := rehashAfter(ctx, tx, q.Table(p.table), p.last, rehashBatch)
				if err != nil {
					return err
				}
				done = n < rehashBatch
				p.last = last
				_, err = tx.Exec(ctx, q.SaveProgress, p.table, last, done)
				return err
			})
			if err != nil {
				return fmt.Errorf("hashing %s again after key %d: %w", p.table, p.last, err)
			}
		}
	}
	return nil
}

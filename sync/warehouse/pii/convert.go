package pii

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// HasPolicy reports whether pd follows a policy (not none).
func (pd *Store) HasPolicy() bool { return pd.p != nil }

// ConvertStored converts, in tx, the stored users of want (id: the content
// hash of the page's row) whose content, with pd's policy applied as pii
// apply would, hashes to it: their personal attributes are rewritten in
// place and their content_hash saved, so the page finds them unchanged and
// makes no version of a policy change. incoming holds each row's values,
// whose hashes are taken for a value hashed under another key. It returns
// the saved hashes by id.
func (pd *Store) ConvertStored(ctx context.Context, tx pgx.Tx, w pgrow.Writer, want map[int64][]byte, incoming map[int64][]any) (map[int64][]byte, error) {
	rows, err := tx.Query(ctx, pd.rehash.Users.Of, mapKeys(want))
	if err != nil {
		return nil, fmt.Errorf("reading users written under another policy: %w", err)
	}
	hashed := attributeIndexes(pd.p.Hashed())
	var ids []int64
	var vals []string
	hashes := map[int64][]byte{}
	err = pgrow.ScanContent(rows, func(c *pgrow.Content) {
		if c.Erased || !pd.convert(c, hashed, incoming[c.Key]) || !bytes.Equal(c.Hash(), want[c.Key]) {
			return
		}
		out := make([]any, len(hashed))
		for k, i := range hashed {
			out[k] = c.Values[i]
		}
		b, _ := json.Marshal(out) // strings and nulls: cannot fail
		ids, vals = append(ids, c.Key), append(vals, string(b))
		hashes[c.Key] = want[c.Key]
	})
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var policy *int64 // null when the page's writer names none
	if w.Policy != 0 {
		policy = &w.Policy
	}
	if _, err := tx.Exec(ctx, pd.sql.usersRewrite, ids, vals, pd.p.DropUnknown(), policy); err != nil {
		return nil, fmt.Errorf("converting %d users to the personal-data policy: %w", len(ids), err)
	}
	if err := pgrow.SaveHashes(ctx, tx, pd.rehash.Users, hashes); err != nil {
		return nil, err
	}
	return hashes, nil
}

// convert applies the policy to a stored row's content, as pii apply does
// (hashed attributes at the indexes hashed), and takes the row's own hash
// of a value already hashed under another key (a key rotation: the user's
// updatedAt did not move): it reports false when nothing changed. A value is
// taken for a hash by its shape: a clear value of that shape makes a content
// that is not the row's, and the row is then written as a new version, as
// any change is; the shape never decides what is stored.
func (pd *Store) convert(c *pgrow.Content, hashed []int, row []any) bool {
	changed := false
	for _, i := range hashed {
		s, ok := c.Values[i].(string)
		switch {
		case !ok:
		case !normalize.LooksHashed(s):
			c.Values[i], changed = pd.p.HashString(s), true
		case row[i] != nil && row[i] != c.Values[i]:
			c.Values[i], changed = row[i], true
		}
	}
	for _, i := range attributeIndexes(pd.p.Dropped()) {
		changed = changed || c.Values[i] != nil
		c.Values[i] = nil
	}
	if pd.p.DropUnknown() && string(c.Raw) != "{}" {
		c.Raw, changed = []byte("{}"), true
	}
	return changed
}

// attributeIndexes returns the indexes of the named user attributes.
func attributeIndexes(names []string) []int {
	attrs := schema.User().Attributes
	out := make([]int, 0, len(names))
	for _, n := range names {
		out = append(out, slices.IndexFunc(attrs, func(a schema.Attribute) bool { return a.Name == n }))
	}
	return out
}

func mapKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

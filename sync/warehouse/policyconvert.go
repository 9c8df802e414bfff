package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse/internal/pgrow"
)

// convertPolicyOnly converts in place, as usersync pii apply does, the
// stored users of the classified page c whose content differs from the
// page's row only by the personal-data policy the Store writes under
// (WriteUnder): their updatedAt is the stored one, and the stored row with
// the policy applied has the row's content hash. Their stored hash is
// updated in stored, and it returns how many it converted: the page is then
// classified again, and finds them unchanged, so no version is made of a
// policy change. Only rows whose hash differs while their updatedAt does
// not are read.
func (p *userPage) convertPolicyOnly(ctx context.Context, c pageClass, stored map[int64]pgrow.Stored) (int, error) {
	pd := p.s.under.Load()
	if pd == nil || pd.p == nil {
		return 0, nil
	}
	want := map[int64][]byte{}
	incoming := map[int64][]any{}
	for _, lr := range c.changed {
		cur := stored[lr.Normalized.ID]
		if cur.Deleted || cur.UpdatedAt == nil || !cur.UpdatedAt.Equal(lr.Normalized.UpdatedAt) || bytes.Equal(lr.Content, cur.Hash) {
			continue
		}
		want[lr.Normalized.ID], incoming[lr.Normalized.ID] = lr.Content, lr.Normalized.Values
	}
	if len(want) == 0 {
		return 0, nil
	}
	rows, err := p.tx.Query(ctx, p.s.rehash.Users.Of, mapKeys(want))
	if err != nil {
		return 0, fmt.Errorf("reading users written under another policy: %w", err)
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
		return 0, err
	}
	var policy *int64 // null when the page's writer names none
	if p.w.Policy != 0 {
		policy = &p.w.Policy
	}
	if _, err := p.tx.Exec(ctx, pd.sql.usersRewrite, ids, vals, pd.p.DropUnknown(), policy); err != nil {
		return 0, fmt.Errorf("converting %d users to the personal-data policy: %w", len(ids), err)
	}
	if err := pgrow.SaveHashes(ctx, p.tx, p.s.rehash.Users, hashes); err != nil {
		return 0, err
	}
	for id, h := range hashes {
		u := stored[id]
		u.Hash = h
		stored[id] = u
	}
	return len(ids), nil
}

// convert applies the policy to a stored row's content, as pii apply does
// (hashed attributes at the indexes hashed), and takes the row's own hash
// of a value already hashed under another key (a key rotation: the user's
// updatedAt did not move): it reports false when nothing changed. A value is
// taken for a hash by its shape: a clear value of that shape makes a content
// that is not the row's, and the row is then written as a new version, as
// any change is; the shape never decides what is stored.
func (pd *Personal) convert(c *pgrow.Content, hashed []int, row []any) bool {
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

package users

import (
	"bytes"
	"context"

	"github.com/usersync/usersync/sync/warehouse/pgrow"
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
func (p *PreparedPage) convertPolicyOnly(ctx context.Context, c pageClass, stored map[int64]pgrow.Stored) (int, error) {
	pd := p.s.under.Load()
	if pd == nil || !pd.HasPolicy() {
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
	hashes, err := pd.ConvertStored(ctx, p.tx, p.w, want, incoming)
	if err != nil || len(hashes) == 0 {
		return 0, err
	}
	for id, h := range hashes {
		u := stored[id]
		u.Hash = h
		stored[id] = u
	}
	return len(hashes), nil
}

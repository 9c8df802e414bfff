package pii

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
)

// holding is how a stored value of a hashed attribute is held, as far as
// pii apply knows from the policy its row was written under.
type holding int

const (
	heldClear    holding = iota // the row's policy did not hash it: pii apply hashes it
	heldHashed                  // hashed under the current policy's key: left alone
	heldOtherKey                // hashed under another key: cannot be re-keyed, left and counted
)

// rowPolicy is what pii apply needs of a policy rows were written under.
type rowPolicy struct {
	hashed []string // API names
	keyID  string   // "" without a key
}

// rowPolicies are the policies of pii_policies by id, and the policy being
// applied: what tells pii apply, per row (its pii_policy_id), which values
// already hold hashes and under which key.
type rowPolicies struct {
	current int64  // the id of the policy being applied
	keyID   string // its key's id
	byID    map[int64]rowPolicy
}

// loadRowPolicies reads every policy rows were written under; current is
// the id of the one being applied.
func (pd *Store) loadRowPolicies(ctx context.Context, current int64) (*rowPolicies, error) {
	rp := &rowPolicies{current: current, keyID: pd.p.KeyID(), byID: map[int64]rowPolicy{}}
	rows, err := pd.pool.Query(ctx, pd.sql.policyKeys)
	if err != nil {
		return nil, fmt.Errorf("reading the personal-data policies: %w", err)
	}
	var id int64
	var p rowPolicy
	_, err = pgx.ForEachRow(rows, []any{&id, &p.hashed, &p.keyID}, func() error {
		rp.byID[id] = rowPolicy{hashed: slices.Clone(p.hashed), keyID: p.keyID}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the personal-data policies: %w", err)
	}
	return rp, nil
}

// held says how the value v of the hashed attribute name is held in a row
// written under policy id. A row whose policy is not recorded (id nil:
// written before migration 0009 could tell) falls back to the shape of the
// value: 64 lower-case hex digits are taken for a hash under the current key.
func (rp *rowPolicies) held(id *int64, name, v string) holding {
	var p rowPolicy
	ok := id != nil
	if ok {
		p, ok = rp.byID[*id]
	}
	switch {
	case !ok && normalize.LooksHashed(v):
		return heldHashed
	case !ok || !slices.Contains(p.hashed, name):
		return heldClear
	case p.keyID == rp.keyID:
		return heldHashed
	}
	return heldOtherKey
}

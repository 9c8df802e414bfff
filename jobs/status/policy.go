package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pii"
)

// PolicyStatus is the personal-data policy in force (names and key id,
// never the key) and the policies the warehouse holds rows of.
type PolicyStatus struct {
	Fingerprint string   `json:"fingerprint"`
	Hashed      []string `json:"hashed"`
	Dropped     []string `json:"dropped"`
	DropUnknown bool     `json:"drop_unknown"`
	KeyID       string   `json:"key_id,omitempty"`
	pii.PolicyState
}

func readPolicyStatus(ctx context.Context, store *warehouse.Store, p *normalize.Policy) (PolicyStatus, error) {
	ps := PolicyStatus{Fingerprint: p.Fingerprint(), Hashed: p.Hashed(), Dropped: p.Dropped(), DropUnknown: p.DropUnknown(), KeyID: p.KeyID()}
	pd, err := pii.New(store, p)
	if err != nil {
		return ps, err
	}
	ps.PolicyState, err = pd.PolicyState(ctx)
	return ps, err
}

func printPolicy(w io.Writer, ps PolicyStatus) {
	list := func(names []string) string {
		if len(names) == 0 {
			return "none"
		}
		return strings.Join(names, ", ")
	}
	unknown := "kept in raw"
	if ps.DropUnknown {
		unknown = "dropped"
	}
	key := ""
	if ps.KeyID != "" {
		key = "; key id " + ps.KeyID
	}
	fmt.Fprintf(w, "personal     hashed: %s; dropped: %s; unknown attributes %s%s\n", list(ps.Hashed), list(ps.Dropped), unknown, key)
	var other []string
	for _, u := range ps.Used {
		if u.Fingerprint != ps.Fingerprint {
			other = append(other, fmt.Sprintf("%q (last %s)", u.Fingerprint, u.LastUsedAt.UTC().Format(time.RFC3339)))
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(w, "             rows were also written under %s: run usersync pii apply to rewrite them\n", strings.Join(other, ", "))
	}
}

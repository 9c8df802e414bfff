package syncer

import (
	"bytes"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestListDigest: a list's digest does not depend on the order its
// resources came in, and changes with any value, a to-one link sent or not,
// a quarantined resource, or the personal-data policy.
func TestListDigest(t *testing.T) {
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	row := func(id int64, name string) normalize.Row {
		return normalize.Row{ID: id, Values: []any{name, at}, Raw: []byte(`{}`), UpdatedAt: at,
			ToOne: []normalize.ToOne{{ID: 9, Valid: true, Sent: true}}}
	}
	digest := func(policy int64, rows []normalize.Row, bad ...warehouse.Quarantined) []byte {
		d := newListDigest(schema.Team(), policy)
		for i := range rows {
			d.addRow(&rows[i])
		}
		for _, q := range bad {
			d.addBad(0, q)
		}
		return d.sum()
	}
	base := digest(1, []normalize.Row{row(1, "a"), row(2, "b")})
	if got := digest(1, []normalize.Row{row(2, "b"), row(1, "a")}); !bytes.Equal(got, base) {
		t.Error("the same list in another order digests differently")
	}
	unsent := row(2, "b")
	unsent.ToOne[0].Sent = false
	bad := warehouse.Quarantined{Type: "team", ID: "x", Error: "not an integer", Raw: []byte(`{}`)}
	for what, got := range map[string][]byte{
		"a value":           digest(1, []normalize.Row{row(1, "a"), row(2, "c")}),
		"a row less":        digest(1, []normalize.Row{row(1, "a")}),
		"a link not sent":   digest(1, []normalize.Row{row(1, "a"), unsent}),
		"a quarantined one": digest(1, []normalize.Row{row(1, "a"), row(2, "b")}, bad),
		"the policy":        digest(2, []normalize.Row{row(1, "a"), row(2, "b")}),
	} {
		if bytes.Equal(got, base) {
			t.Errorf("%s changed, the digest did not", what)
		}
	}
	d := newListDigest(schema.Team(), 1)
	if d.sameAs(nil) {
		t.Error("an empty list is the same as no digest stored")
	}
}

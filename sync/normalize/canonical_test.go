package normalize

import (
	"testing"
)

var canonicalSeeds = []string{
	`[{"provider":"salesforce","connected":true,"externalId":"005abcDEF0123456789"},{"provider":"hubspot","connected":false,"externalId":"123456789"}]`,
	`{"b": 1, "a": [1, 2.50, -0, 1e21, 1e-7, 0.000001, 12345678901234567890], "c": {"z": null, "y": false}}`,
	`{"a": 1, "a": 2}`,
	`{"html": "<b>&</b>", "é": "\u00e9", "esc": "a\"b\\c\n", "ctl": "\u0001", "sep": "\u2028"}`,
	`"\ud800"`, `[]`, `{}`, ` { "k" : [ ] } `, `1e400`, `[1,]`, `{"a":}`, `nul`, `"\xff"`,
}

// TestCanonicalJSONMatchesEncodingJSON holds the fast path against the
// definition: encoding/json's round trip.
func TestCanonicalJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range canonicalSeeds {
		if got, want := string(CanonicalJSON([]byte(s))), string(canonicalSlow([]byte(s))); got != want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", s, got, want)
		}
	}
	// The fast path is taken for plain data (no maps built): same bytes out
	// whatever the key order and spacing in.
	a := CanonicalJSON([]byte(canonicalSeeds[0]))
	b := CanonicalJSON([]byte(`[ {"externalId":"005abcDEF0123456789", "connected":true, "provider":"salesforce"}, {"connected":false,"provider":"hubspot","externalId":"123456789"} ]`))
	if string(a) != string(b) {
		t.Errorf("reordered keys canonicalize differently: %s vs %s", a, b)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := string(CanonicalJSON(b)), string(canonicalSlow(b)); got != want {
			t.Errorf("CanonicalJSON(%q) = %q, want %q", b, got, want)
		}
	})
}

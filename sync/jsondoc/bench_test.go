package jsondoc

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeUsersPage decodes a realistic 1000-user page (~2.3 MB) and
// reports users decoded per second.
func BenchmarkDecodeUsersPage(b *testing.B) {
	const users = 1000
	body := usersPage(1, users, "https://api.example.com", "https://api.example.com/api/v2/users?page%5Bafter%5D=abc")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		doc, err := Decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if len(doc.Data) != users {
			b.Fatalf("got %d users", len(doc.Data))
		}
	}
	b.ReportMetric(float64(users*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkLinkage decodes the relationship data of a 1000-user page (nine
// relationships a user, as the reconcile's scan and the dimension walks
// read them) by parseLinkage, the hand-written parser, and by the JSON
// decoder alone: the parser is kept only while it is clearly faster.
func BenchmarkLinkage(b *testing.B) {
	var page struct {
		Data []struct {
			Relationships map[string]struct {
				Data json.RawMessage `json:"data"`
			} `json:"relationships"`
		} `json:"data"`
	}
	if err := json.Unmarshal(usersPage(1, 1000, "https://h", ""), &page); err != nil {
		b.Fatal(err)
	}
	var raw [][]byte
	for _, u := range page.Data {
		for _, r := range u.Relationships {
			if r.Data != nil {
				raw = append(raw, r.Data)
			}
		}
	}
	for _, bc := range []struct {
		name   string
		decode func(l *Linkage, b []byte) error
	}{{"parser", (*Linkage).UnmarshalJSON}, {"json", (*Linkage).decodeAny}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range raw {
					var l Linkage
					if err := bc.decode(&l, r); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(raw)*b.N)/b.Elapsed().Seconds(), "linkages/s")
		})
	}
}

package normalize

import (
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
)

// BenchmarkDecodeData types simulator pages of 500 users, as a sync asks
// for them (data connections and authorization meta included), with the
// single pass: the decode stage of a backfill on its own.
func BenchmarkDecodeData(b *testing.B) { benchDecodeData(b, nil) }

// BenchmarkDecodeDataPolicy is BenchmarkDecodeData under a policy hashing
// email and dropping phoneNumber and unknown attributes: the policy's cost.
func BenchmarkDecodeDataPolicy(b *testing.B) { benchDecodeData(b, testPolicy(b)) }

func benchDecodeData(b *testing.B, p *Policy) {
	pages := simPages(b, 5000, apisim.Knobs{})
	n := New(schema.User())
	n.SetPolicy(p)
	users, size := 0, 0
	for _, p := range pages {
		size += len(p)
	}
	b.SetBytes(int64(size / len(pages)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d, _, err := n.DecodeData(pages[i%len(pages)])
		if err != nil {
			b.Fatal(err)
		}
		users += len(d.Rows)
	}
	b.ReportMetric(float64(users)/b.Elapsed().Seconds(), "users/s")
}

// BenchmarkHashRows hashes typed simulator pages of 500 users (content and
// linkage), as the sync does for each row it writes.
func BenchmarkHashRows(b *testing.B) {
	pages := simPages(b, 5000, apisim.Knobs{})
	n := New(schema.User())
	var rows [][]Row
	for _, p := range pages {
		d, _, err := n.DecodeData(p)
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, d.Rows)
	}
	b.ReportAllocs()
	b.ResetTimer()
	users := 0
	for i := 0; b.Loop(); i++ {
		page := rows[i%len(rows)]
		for j := range page {
			page[j].Hash()
			page[j].LinkageHash()
		}
		users += len(page)
	}
	b.ReportMetric(float64(users)/b.Elapsed().Seconds(), "users/s")
}

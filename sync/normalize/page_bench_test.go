package normalize

import (
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi/apisim"
)

// BenchmarkDecodeData types simulator pages of 500 users, as a sync asks
// for them (data connections and authorization meta included), with the
// single pass: the decode stage of a backfill on its own.
func BenchmarkDecodeData(b *testing.B) {
	pages := simPages(b, 5000, apisim.Knobs{})
	n := New(schema.User())
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
		users += len(d.(*Page).Rows)
	}
	b.ReportMetric(float64(users)/b.Elapsed().Seconds(), "users/s")
}

package jsondoc

import "testing"

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

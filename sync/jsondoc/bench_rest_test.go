package jsondoc

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/internal/jsonscan"
)

// BenchmarkDecodePageRest decodes what a users walk with a DataDecoder
// leaves to the client: the first simulator page of 1000 users (of
// 100,000, in 4,000 teams), as the sync asks for it (teams included), all
// but its "data" array. With normalize's BenchmarkDecodeData it is the
// decode stage of a backfill.
func BenchmarkDecodePageRest(b *testing.B) {
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 1, Users: 100_000}))
	defer srv.Close()
	// The query jsonapi.Query builds for the sync's users walk.
	const q = "count=false&fields%5Bteam%5D=&include=teams&page%5Bsize%5D=1000&provideAuthorizationMeta=true&provideDataConnections=true&sort=updatedAt"
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v2/users?"+q, nil)
	req.Header.Set("Authorization", "Bearer bench")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	_, at, err := dataAt(body)
	if err != nil {
		b.Fatal(err)
	}
	n, ok := jsonscan.SkipValue(body, at, 0)
	if !ok {
		b.Fatalf("page: %.200s", body)
	}
	n -= at
	skip := func([]byte) (any, int, error) { return nil, n, nil }
	b.SetBytes(int64(len(body) - n))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeData(body, at, skip); err != nil {
			b.Fatal(err)
		}
	}
}

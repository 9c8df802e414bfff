package syncer

import (
	"net/url"
	"slices"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi"
)

// TestIDBatches: batches keep every id once and in order, each request line
// fits the budget, and a batch only ends where the next id would not fit
// (or at the page size).
func TestIDBatches(t *testing.T) {
	t.Parallel()
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: "https://api.example.com/prefix", Auth: jsonapi.StaticToken("x")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(client, nil, Config{})
	if err != nil {
		t.Fatal(err)
	}
	seq := func(n int, first, step int64) []int64 {
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = first + int64(i)*step
		}
		return ids
	}
	tests := []struct {
		name    string
		ids     []int64
		maxLine int
		wantErr bool
	}{
		{name: "small ids hit the page size", ids: seq(2500, 1, 1), maxLine: 1 << 20},
		{name: "seven-digit ids", ids: seq(5000, 1_000_000, 3), maxLine: DefaultMaxRequestLine},
		{name: "nineteen-digit ids", ids: seq(3000, 9_100_000_000_000_000_000, 7919), maxLine: DefaultMaxRequestLine},
		{name: "mixed lengths", ids: append(seq(700, 5, 1), seq(700, 1<<62, 1)...), maxLine: 4096},
		{name: "one id over the budget", ids: []int64{1 << 62}, maxLine: 60, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			batches, err := s.idBatches(tt.ids, tt.maxLine)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var all []int64
			for i, b := range batches {
				all = append(all, b...)
				line := requestLine(t, s, b)
				if line > tt.maxLine || len(b) > reconcilePageSize {
					t.Errorf("batch %d: %d ids, request line %d > %d", i, len(b), line, tt.maxLine)
				}
				if i < len(batches)-1 && len(b) < reconcilePageSize {
					next := append(slices.Clone(b), batches[i+1][0])
					if requestLine(t, s, next) <= tt.maxLine {
						t.Errorf("batch %d ends early: the next id would fit", i)
					}
				}
			}
			if !slices.Equal(all, tt.ids) {
				t.Errorf("batches hold %d ids, not the %d given in order", len(all), len(tt.ids))
			}
		})
	}
}

func requestLine(t *testing.T, s *Syncer, ids []int64) int {
	t.Helper()
	raw, err := s.client.CollectionURL("users", s.fetchQuery(ids))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return len("GET " + u.RequestURI() + " HTTP/1.1")
}

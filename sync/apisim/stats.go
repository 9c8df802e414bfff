package apisim

import (
	"maps"
	"sync"
)

// Stats counts what the simulator served since it started or since the
// last ResetStats.
type Stats struct {
	// Requests counts every request, the token endpoint and unknown paths
	// included.
	Requests int64
	// ByEndpoint counts requests by method and route, e.g.
	// "GET /api/v2/users", "GET /api/v2/users/{id}", "POST /oauth/token";
	// unknown paths count as "other".
	ByEndpoint map[string]int64
	// ByStatus counts responses by HTTP status.
	ByStatus map[int]int64
	// RateLimited counts 429 responses.
	RateLimited int64
	// Faults counts injected failures (FailNext, FailEvery, FaultRate).
	Faults int64
	// Truncated counts responses cut short by TruncateRate.
	Truncated int64
	// Bytes counts response body bytes written.
	Bytes int64
	// Resources counts primary resources served, by type ("user", "team").
	Resources map[string]int64
	// Pages counts successful collection and single-resource responses.
	Pages int64
	// ChurnRounds counts the mutation rounds run by the Churn knob.
	ChurnRounds int64
}

type statsState struct {
	mu sync.Mutex
	s  Stats
}

func (st *statsState) reset() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s = Stats{ByEndpoint: map[string]int64{}, ByStatus: map[int]int64{}, Resources: map[string]int64{}}
}

func (st *statsState) record(endpoint string, status int, bytes int64, truncated bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Requests++
	st.s.ByEndpoint[endpoint]++
	st.s.ByStatus[status]++
	st.s.Bytes += bytes
	if status == 429 {
		st.s.RateLimited++
	}
	if truncated {
		st.s.Truncated++
	}
}

func (st *statsState) served(typ string, n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Resources[typ] += int64(n)
	st.s.Pages++
}

func (st *statsState) fault() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Faults++
}

func (st *statsState) churned() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.ChurnRounds++
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	out := s.stats.s
	out.ByEndpoint = maps.Clone(out.ByEndpoint)
	out.ByStatus = maps.Clone(out.ByStatus)
	out.Resources = maps.Clone(out.Resources)
	return out
}

// ResetStats zeroes the counters (token grants are kept: see TokenGrants).
func (s *Server) ResetStats() { s.stats.reset() }

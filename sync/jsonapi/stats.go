package jsonapi

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// Stats is a snapshot of a Client's counters, from Client.Stats.
type Stats struct {
	// Requests counts every attempt sent, retries and refused ones included.
	Requests int64
	// ByStatus counts attempts by HTTP status; 0 counts those that got no
	// response (network error, timeout).
	ByStatus map[int]int64
	// ByStatusClass counts attempts by class: "2xx", "3xx", "4xx", "5xx",
	// and "error" for those that got no response.
	ByStatusClass map[string]int64
	// ByEndpoint counts attempts by collection ("users", "teams"...).
	ByEndpoint map[string]int64
	// RateLimited counts 429 responses.
	RateLimited int64
	// Retries counts attempts that were retries of an earlier one (after a
	// 5xx, a network error, a bad body, a 429 or a 401).
	Retries int64
	// PacingWaits counts the waits taken to spread requests when the
	// rate-limit budget ran low.
	PacingWaits int64
	// BytesRead counts response body bytes read.
	BytesRead int64
	// RateLimit holds the last rate-limit headers seen.
	RateLimit RateLimit
}

// stats holds the live counters. Every field is updated atomically, so the
// client's goroutines never contend on a lock for it.
type stats struct {
	requests    atomic.Int64
	rateLimited atomic.Int64
	retries     atomic.Int64
	paced       atomic.Int64
	bytes       atomic.Int64
	byStatus    sync.Map // int -> *atomic.Int64
	byEndpoint  sync.Map // string -> *atomic.Int64
}

// record counts one attempt. status is 0 when there was no response.
func (s *stats) record(endpoint string, status int, bytes int) {
	s.requests.Add(1)
	s.bytes.Add(int64(bytes))
	if status == 429 {
		s.rateLimited.Add(1)
	}
	counter(&s.byStatus, status).Add(1)
	counter(&s.byEndpoint, endpoint).Add(1)
}

func counter[K comparable](m *sync.Map, key K) *atomic.Int64 {
	if v, ok := m.Load(key); ok {
		return v.(*atomic.Int64)
	}
	v, _ := m.LoadOrStore(key, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	s := &c.stats
	out := Stats{
		Requests:      s.requests.Load(),
		ByStatus:      map[int]int64{},
		ByStatusClass: map[string]int64{},
		ByEndpoint:    map[string]int64{},
		RateLimited:   s.rateLimited.Load(),
		Retries:       s.retries.Load(),
		PacingWaits:   s.paced.Load(),
		BytesRead:     s.bytes.Load(),
		RateLimit:     c.rate.snapshot(),
	}
	s.byStatus.Range(func(k, v any) bool {
		code, n := k.(int), v.(*atomic.Int64).Load()
		out.ByStatus[code] = n
		out.ByStatusClass[statusClass(code)] += n
		return true
	})
	s.byEndpoint.Range(func(k, v any) bool {
		out.ByEndpoint[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "error"
	}
	return strconv.Itoa(code/100) + "xx"
}

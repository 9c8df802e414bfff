package jsonapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkOversizedBodiesAtOnce fetches four 300 MB bodies at once, sent
// without Content-Length (the users page and the three dimension lists of
// a sync), against the default limits, each refused at its limit (64 MiB),
// and reports the peaks, sampled every millisecond, of the heap's objects
// above what they were before (live buffers and garbage not yet
// collected), and of all the memory the Go runtime mapped (close to the
// process's RSS; meaningful in a fresh process only, with -count 1). The
// deploy files set GOMEMLIMIT, which makes the collector reclaim garbage
// before the heap reaches it; set it to see the live bytes:
//
//	GOMEMLIMIT=160MiB go test -run '^$' -bench OversizedBodiesAtOnce -benchtime 3x ./sync/jsonapi
func BenchmarkOversizedBodiesAtOnce(b *testing.B) {
	var peakMapped, peakHeap uint64
	for b.Loop() {
		srv := oversizedServer(int64(len(dimensionsAndUsers)))
		c, err := NewClient(Options{BaseURL: srv.URL, Auth: StaticToken("bench"), BackoffBase: time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		mapped, heap := sampleMemory(func() {
			for _, err := range fetchAtOnce(c) {
				if err == nil {
					b.Fatal("an oversized body was accepted")
				}
			}
		})
		peakMapped, peakHeap = max(peakMapped, mapped), max(peakHeap, heap)
		srv.Close()
	}
	b.ReportMetric(float64(peakMapped)/(1<<20), "peak-mapped-MiB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
}

// oversizedServer sends 300 MB bodies without Content-Length, each once n
// requests have arrived, so that the bodies are read at once.
func oversizedServer(n int64) *httptest.Server {
	const size = 300_000_000
	chunk := bytes.Repeat([]byte(" "), 256<<10)
	var arrived atomic.Int64
	all := make(chan struct{})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		<-all
		w.Header().Set("Content-Type", MediaType)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
}

// sampleMemory runs f and returns the peaks of the memory mapped by the Go
// runtime and, above its value before f, of the heap's objects.
func sampleMemory(f func()) (mapped, heap uint64) {
	runtime.GC()
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(samples)
	baseHeap := samples[1].Value.Uint64()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			mapped = max(mapped, samples[0].Value.Uint64())
			heap = max(heap, samples[1].Value.Uint64()-min(baseHeap, samples[1].Value.Uint64()))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return mapped, heap
}

// dimensionsAndUsers are the collections a sync fetches at once.
var dimensionsAndUsers = []string{"users", "teams", "roles", "profiles"}

// fetchAtOnce fetches the first page of each of dimensionsAndUsers at once.
func fetchAtOnce(c *Client) []error {
	errs := make([]error, len(dimensionsAndUsers))
	var wg sync.WaitGroup
	for i, name := range dimensionsAndUsers {
		wg.Go(func() { _, errs[i] = c.Collection(name, Query{}).Next(context.Background()) })
	}
	wg.Wait()
	return errs
}

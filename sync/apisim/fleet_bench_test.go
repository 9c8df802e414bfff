package apisim

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkFleetMemory builds the fleet of the scale run (500
// accounts of 2,000 users and 3 of 100,000), serves one page of users from
// each account, and reports the process's resident memory, the live heap
// and the heap per small account. Run it alone, so the RSS is the fleet's:
//
//	go test -run='^$' -bench=FleetMemory -benchtime=1x ./sync/apisim/
func BenchmarkFleetMemory(b *testing.B) {
	opts := FleetOptions{Seed: 41, Now: fixedClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))}
	for i := range 503 {
		users := 2000
		if i >= 500 {
			users = 100_000
		}
		opts.Accounts = append(opts.Accounts, AccountOptions{Name: fmt.Sprintf("acct_%03d", i+1),
			Options: Options{Users: users, Knobs: Knobs{RateLimit: 10_000}}})
	}
	for range b.N {
		before := liveHeap()
		start := time.Now()
		f := NewFleet(opts)
		built := time.Since(start)
		for _, a := range f.Accounts() {
			req := httptest.NewRequest(http.MethodGet, a.Path+"/api/v2/users?page[size]=100&include=teams", nil)
			req.Header.Set("Authorization", "Bearer "+a.Token)
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", a.Name, rec.Code, rec.Body)
			}
		}
		heap := liveHeap() - before
		b.ReportMetric(built.Seconds(), "build-s")
		b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
		b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
		small := liveHeapOf(func() any { return NewFleet(FleetOptions{Seed: 1, Accounts: opts.Accounts[:100]}) })
		b.ReportMetric(float64(small)/100/(1<<10), "kB/account")
		runtime.KeepAlive(f)
	}
	b.ReportMetric(0, "ns/op")
}

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// liveHeapOf returns the live heap that build's result holds.
func liveHeapOf(build func() any) int64 {
	before := liveHeap()
	v := build()
	after := liveHeap()
	runtime.KeepAlive(v)
	return after - before
}

// rssBytes reads the process's resident set (Linux; 0 elsewhere).
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

package apisim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchSim is shared by the benchmarks: building a million users takes a
// moment and the benchmarks only read.
var benchSim = sync.OnceValue(func() *Server {
	return New(Options{Seed: 42, Users: 1_000_000, Now: fixedClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))})
})

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// walkPages follows links.next from first to the end, reading each body,
// and returns the pages and users read. Only links.next is decoded (from
// the tail of the body), so the client costs next to nothing.
func walkPages(b *testing.B, client *http.Client, first string, maxPages int) (pages, users int) {
	url := first
	buf := make([]byte, 0, 4<<20)
	for url != "" && pages < maxPages {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			n, err := resp.Body.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d: %s", resp.StatusCode, buf)
		}
		var tail struct {
			Links struct{ Next string } `json:"links"`
			Meta  struct{ Count *int }  `json:"meta"`
		}
		i := lastIndex(buf, []byte(`,"links":{`))
		if i < 0 {
			break
		}
		if err := json.Unmarshal(append([]byte("{"), buf[i+1:]...), &tail); err != nil {
			b.Fatal(err)
		}
		url = tail.Links.Next
		pages++
		users += 1000
	}
	return pages, users
}

func lastIndex(b, sub []byte) int {
	for i := len(b) - len(sub); i >= 0; i-- {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}

// BenchmarkServeUsersPages serves 1000-user pages, sorted by updatedAt and
// filtered on it, from a million users over real HTTP.
func BenchmarkServeUsersPages(b *testing.B) {
	sim := benchSim()
	srv := httptest.NewServer(sim)
	defer srv.Close()
	first := srv.URL + "/api/v2/users?filter%5BupdatedAt%5D=2023-01-01T00:00:00.000Z..inf&sort=updatedAt&page%5Bsize%5D=1000&count=false"
	for _, inFlight := range []int{1, 2} {
		b.Run(map[int]string{1: "sequential", 2: "two_in_flight"}[inFlight], func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
			var pages, users int
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for range b.N {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for range inFlight {
					wg.Go(func() {
						p, u := walkPages(b, client, first, 100)
						mu.Lock()
						pages, users = pages+p, users+u
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(pages)/secs, "pages/s")
			b.ReportMetric(float64(users)/secs, "users/s")
			// CPU per user, server and client together: 2 cores divided by
			// it is the throughput an otherwise idle 2-core machine reaches.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(users), "cpu-ns/user")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkNew measures building a million-user dataset and its memory.
func BenchmarkNew(b *testing.B) {
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sim := New(Options{Seed: 7, Users: 1_000_000})
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB")
		runtime.KeepAlive(sim)
	}
}

// cpuTime returns the process's user+system CPU time: on a shared machine it
// measures the simulator's cost better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRenderPage renders 1000-user pages without HTTP: the
// simulator's own cost.
func BenchmarkRenderPage(b *testing.B) {
	sim := New(Options{Seed: 42, Users: 10_000})
	req := httptest.NewRequest("GET", "/api/v2/users?sort=updatedAt&page[size]=1000&count=false", nil)
	k := sim.knobs.Load()
	buf := make([]byte, 0, 4<<20)
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		body, _, err := sim.serveCollection(req, sim.types[kindUser], k, buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		buf = body
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "users/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*1000), "cpu-ns/user")
	b.ReportMetric(float64(len(buf))/1000, "bytes/user")
}

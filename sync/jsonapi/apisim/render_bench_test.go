package apisim

import (
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the process's user+system CPU time: on a shared machine it
// measures the simulator's cost better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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

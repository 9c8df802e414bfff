package jsonapi

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// hostileAccounts is how many accounts' clients read oversized bodies at
// once in the tests and the benchmark below: the worker's four slots.
const hostileAccounts = 4

// fetchAccountsAtOnce has every client fetch the users page and the three
// dimension lists, all of them at once, and returns every error.
func fetchAccountsAtOnce(clients []*Client) [][]error {
	errs := make([][]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { errs[i] = fetchAtOnce(c) })
	}
	wg.Wait()
	return errs
}

// TestHostileAccountsShareOneBudget: four accounts' clients given one
// BodyBudget (as a worker gives its accounts) read sixteen oversized bodies
// at once, each refused at its limit, and the bytes granted to all of them
// at once never pass the one budget (a body that could not grow while all
// the others waited is refused by it), where a budget per client let four
// budgets' worth be held.
func TestHostileAccountsShareOneBudget(t *testing.T) {
	t.Parallel()
	const limit, size = 1 << 20, 50 << 20
	url := newGatedServer(t, hostileAccounts*len(dimensionsAndUsers), size, false)
	shared := NewBodyBudget(2 * limit)
	clients := make([]*Client, hostileAccounts)
	for i := range clients {
		clients[i] = newClient(t, url, newFakeClock(t), func(o *Options) { o.MaxBodyBytes, o.Bodies = limit, shared })
		if clients[i].budget != shared {
			t.Fatal("a client given Options.Bodies reads under a budget of its own")
		}
	}
	for i, errs := range fetchAccountsAtOnce(clients) {
		for j, err := range errs {
			// Sixteen buffers growing at once may leave one unable to
			// grow while the others wait: refused by the budget then.
			var tooLarge errBodyTooLarge
			var budget errBodyBudget
			if !errors.As(err, &tooLarge) && !errors.As(err, &budget) {
				t.Errorf("account %d, %s: error %v, want the body refused at its limit or the budget's", i, dimensionsAndUsers[j], err)
			}
		}
	}
	if peak := shared.Peak(); peak > shared.Limit()+1 || peak <= limit {
		t.Errorf("%d bytes granted at once to four accounts, want over one body's limit (%d) and at most the one budget (%d, and the byte past a body)",
			peak, limit, shared.Limit())
	}
	if shared.used != 0 || shared.holders != 0 {
		t.Errorf("after the reads: %d bytes and %d holders left", shared.used, shared.holders)
	}
}

// TestSharedBudgetBelowMaxBodyBytes: a shared budget smaller than one body
// is refused, as MaxBodyBytesInFlight is.
func TestSharedBudgetBelowMaxBodyBytes(t *testing.T) {
	t.Parallel()
	_, err := NewClient(Options{BaseURL: "https://api.example.com", Auth: StaticToken("t"), MaxBodyBytes: 2 << 20, Bodies: NewBodyBudget(1 << 20)})
	if err == nil {
		t.Error("a shared budget of 1 MiB accepted for bodies of 2 MiB")
	}
}

// BenchmarkHostileAccountsAtOnce: four accounts' APIs each send four
// 300 MB bodies at once, without Content-Length (each account's users page
// and three dimension lists, the four accounts in the worker's four slots),
// against the default limits (64 MiB a body, 128 MiB of bodies at once),
// each refused at its limit; shared gives the four clients one budget, as
// the worker does, per-client a budget each, as before. It reports the
// peaks of the memory the Go runtime mapped (close to the process's RSS;
// meaningful in a fresh process only, with -count 1) and of the heap's
// objects, without GOMEMLIMIT, and, shared, the budget's high-water mark:
//
//	go test -run '^$' -bench HostileAccountsAtOnce/shared -benchtime 1x -count 1 ./sync/jsonapi
func BenchmarkHostileAccountsAtOnce(b *testing.B) {
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "per-client"}[shared]
		b.Run(name, func(b *testing.B) { benchHostileAccounts(b, shared) })
	}
}

func benchHostileAccounts(b *testing.B, shared bool) {
	var peakMapped, peakHeap, peakGranted uint64
	for b.Loop() {
		srv := oversizedServer(hostileAccounts * int64(len(dimensionsAndUsers)))
		var budget *BodyBudget
		if shared {
			budget = NewBodyBudget(2 * (64 << 20))
		}
		clients := make([]*Client, hostileAccounts)
		for i := range clients {
			c, err := NewClient(Options{BaseURL: srv.URL, Auth: StaticToken("bench"), BackoffBase: time.Millisecond, Bodies: budget})
			if err != nil {
				b.Fatal(err)
			}
			clients[i] = c
		}
		mapped, heap := sampleMemory(func() {
			for _, errs := range fetchAccountsAtOnce(clients) {
				for _, err := range errs {
					if err == nil {
						b.Fatal("an oversized body was accepted")
					}
				}
			}
		})
		peakMapped, peakHeap = max(peakMapped, mapped), max(peakHeap, heap)
		if budget != nil {
			peakGranted = max(peakGranted, uint64(budget.Peak()))
		}
		srv.Close()
	}
	b.ReportMetric(float64(peakMapped)/(1<<20), "peak-mapped-MiB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	if shared {
		b.ReportMetric(float64(peakGranted)/(1<<20), "peak-granted-MiB")
	}
}

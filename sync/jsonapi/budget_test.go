package jsonapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// newGatedServer serves a body of size bytes (with Content-Length when
// withLength) to every request, each request once all of the first n have
// arrived, so that n bodies are read at once.
func newGatedServer(t *testing.T, n int, size int, withLength bool) string {
	t.Helper()
	chunk := bytes.Repeat([]byte(" "), 64<<10)
	var arrived atomic.Int64
	all := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == int64(n) {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", MediaType)
		if withLength {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		_, _ = w.Write([]byte(`{"data":[]`))
		for sent := 10; sent < size-1; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-1-sent)]); err != nil {
				return
			}
		}
		_, _ = w.Write([]byte("}"))
	})
	return srv.URL
}

// TestOversizedBodiesShareOneBudget: four oversized bodies read at once
// (the users page and the three dimension lists) are each refused at their
// limit, and the bytes granted to all of them at once never pass the
// shared budget (two limits by default), where each took 1.5 limits before.
func TestOversizedBodiesShareOneBudget(t *testing.T) {
	t.Parallel()
	const limit, size = 1 << 20, 50 << 20
	c := newClient(t, newGatedServer(t, 4, size, false), newFakeClock(t), func(o *Options) { o.MaxBodyBytes = limit })
	for i, err := range fetchAtOnce(c) {
		var tooLarge errBodyTooLarge
		if !errors.As(err, &tooLarge) {
			t.Errorf("%s: error %v, want the body refused at its limit", dimensionsAndUsers[i], err)
		}
	}
	if peak := c.budget.peak; peak > 2*limit+1 || peak <= limit {
		t.Errorf("%d bytes granted at once, want over one limit (%d) and at most the budget (%d, and the byte past a body)", peak, limit, 2*limit)
	}
	if c.budget.used != 0 || c.budget.holders != 0 {
		t.Errorf("after the reads: %d bytes and %d holders left", c.budget.used, c.budget.holders)
	}
}

// TestBodiesWaitForTheBudget: four bodies under the limit that do not fit
// in the budget together wait for one another and all arrive, with
// Content-Length or without.
func TestBodiesWaitForTheBudget(t *testing.T) {
	t.Parallel()
	const limit, size = 1 << 20, 700 << 10
	for _, withLength := range []bool{true, false} {
		// Whether two reads overlap is the scheduler's to say: a loaded
		// machine (CI's poison run) once read the four bodies one after the
		// other. A budget that grants one body at a time fails every try.
		var peak int64
		for try := 0; try < 3 && peak < 2*size; try++ {
			c := newClient(t, newGatedServer(t, 4, size, withLength), newFakeClock(t), func(o *Options) {
				o.MaxBodyBytes, o.MaxBodyBytesInFlight = limit, 2*limit
			})
			for i, err := range fetchAtOnce(c) {
				if err != nil {
					t.Errorf("Content-Length %v: %s: %v", withLength, dimensionsAndUsers[i], err)
				}
			}
			if p := c.budget.peak; p > 2*limit+1 {
				t.Errorf("Content-Length %v: %d bytes granted at once, want at most %d", withLength, p, 2*limit)
			}
			peak = max(peak, c.budget.peak)
		}
		if peak < 2*size {
			t.Errorf("Content-Length %v: %d bytes granted at once in three tries, want at least two bodies'", withLength, peak)
		}
	}
}

// TestBodyOverTheWholeBudget: a body that alone needs more than the budget
// fails at once (not retried), naming the setting; one of the largest size
// allowed, with Content-Length, fits a budget of that size.
func TestBodyOverTheWholeBudget(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	exact := newClient(t, newGatedServer(t, 1, limit, true), newFakeClock(t), func(o *Options) {
		o.MaxBodyBytes, o.MaxBodyBytesInFlight = limit, limit
	})
	if _, err := exact.Collection("users", Query{}).Next(context.Background()); err != nil {
		t.Errorf("a body of MaxBodyBytes with a budget of MaxBodyBytes: %v", err)
	}
	c := newClient(t, newGatedServer(t, 1, 50<<20, false), newFakeClock(t), func(o *Options) {
		o.MaxBodyBytes, o.MaxBodyBytesInFlight = limit, limit
	})
	_, err := c.Collection("users", Query{}).Next(context.Background())
	want := "a body needs more than 1 MiB, the limit of all bodies read at once (USERSYNC_MAX_RESPONSE_MEMORY)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	if st := c.Stats(); st.Requests != 1 {
		t.Errorf("%d requests, want 1 (not retried)", st.Requests)
	}
}

// TestBudgetRefusesAWaitThatCannotEnd: a holder that needs more while
// every other holder waits fails rather than waits forever, and the
// waiting one gets its bytes once the failed one gives its own back.
func TestBudgetRefusesAWaitThatCannotEnd(t *testing.T) {
	t.Parallel()
	b := NewBodyBudget(10)
	g1, g2 := b.grant(), b.grant()
	for _, g := range []*bodyGrant{g1, g2} {
		if err := g.take(context.Background(), 4); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- g1.take(context.Background(), 4) }()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		b.mu.Lock()
		waiting := b.waiting
		b.mu.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first holder never waited")
		}
	}
	var budgetErr errBodyBudget
	if err := g2.take(context.Background(), 4); !errors.As(err, &budgetErr) || budgetErr.never {
		t.Fatalf("second holder: %v, want a budget error", err)
	}
	g2.release()
	if err := <-done; err != nil || g1.n != 8 {
		t.Errorf("first holder: %v, holding %d; want 8 bytes", err, g1.n)
	}
	g1.release()
	if b.used != 0 || b.holders != 0 || b.peak != 8 {
		t.Errorf("used %d, holders %d, peak %d; want 0, 0, 8", b.used, b.holders, b.peak)
	}
}

// TestMaxBodyBytesInFlightBelowMaxBodyBytes: a budget smaller than one
// body is refused.
func TestMaxBodyBytesInFlightBelowMaxBodyBytes(t *testing.T) {
	t.Parallel()
	_, err := NewClient(Options{BaseURL: "https://api.example.com", Auth: StaticToken("t"), MaxBodyBytes: 2 << 20, MaxBodyBytesInFlight: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "MaxBodyBytesInFlight must be at least MaxBodyBytes") {
		t.Errorf("error %v", err)
	}
}

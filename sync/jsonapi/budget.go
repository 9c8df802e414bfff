package jsonapi

import (
	"context"
	"fmt"
	"sync"
)

// BodyBudget bounds the bytes of all the response bodies its clients read or
// decode at once, because the users walk, the dimension lists and many
// accounts fetch at the same time. A read that would wait forever for bytes
// fails instead and its request is retried.
type BodyBudget struct {
	limit   int64
	mu      sync.Mutex
	used    int64
	peak    int64         // the most bytes granted at once (Peak)
	holders int           // grants holding bytes
	waiting int           // of them, those waiting for more since freed was made
	freed   chan struct{} // closed, and replaced, when bytes are given back
}

// NewBodyBudget returns a budget of limit bytes (at least 1) for the
// response bodies of the clients given it (Options.Bodies).
func NewBodyBudget(limit int64) *BodyBudget {
	return &BodyBudget{limit: max(limit, 1), freed: make(chan struct{})}
}

// Limit is the budget's bound in bytes.
func (b *BodyBudget) Limit() int64 { return b.limit }

// Peak is the most bytes the budget granted at once since it was made: at
// most Limit and one byte (a read takes one past its body to see it end).
func (b *BodyBudget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// bodyGrant is the bytes one body read holds. A nil *bodyGrant is a read
// outside the budget (the OAuth client's small bodies). It is used by one
// goroutine at a time.
type bodyGrant struct {
	b *BodyBudget
	n int64
}

// grant returns an empty grant of b; release it when the body is done.
func (b *BodyBudget) grant() *bodyGrant { return &bodyGrant{b: b} }

// errBodyBudget reports a body that the budget could not grant.
type errBodyBudget struct {
	limit int64
	never bool // the body alone needs more than the whole budget
}

func (e errBodyBudget) Error() string {
	if e.never {
		return "a body needs more than " + formatSize(e.limit) + ", the limit of all bodies read at once (USERSYNC_MAX_RESPONSE_MEMORY)"
	}
	return "bodies read at once need more than " + formatSize(e.limit) + ", their limit (USERSYNC_MAX_RESPONSE_MEMORY)"
}

// take adds n bytes to g, waiting while they do not fit and another holder
// may give some back.
func (g *bodyGrant) take(ctx context.Context, n int64) error {
	if g == nil || n <= 0 {
		return nil
	}
	b := g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	// One byte over the limit fits: a read takes one past its body to see
	// it end, so that a budget of MaxBodyBytes reads a body of that size.
	for b.used+n > b.limit+1 {
		switch {
		case g.n+n > b.limit+1:
			return errBodyBudget{limit: b.limit, never: true}
		case g.n > 0 && b.waiting+1 >= b.holders:
			return errBodyBudget{limit: b.limit}
		}
		if err := b.wait(ctx, g.n > 0); err != nil {
			return fmt.Errorf("waiting for memory for the body: %w", err)
		}
	}
	if g.n == 0 {
		b.holders++
	}
	g.n += n
	b.used += n
	b.peak = max(b.peak, b.used)
	return nil
}

// wait releases b.mu until bytes are given back or ctx is done; holder
// says whether the waiting grant holds bytes.
func (b *BodyBudget) wait(ctx context.Context, holder bool) error {
	freed := b.freed
	if holder {
		b.waiting++
	}
	b.mu.Unlock()
	select {
	case <-freed:
	case <-ctx.Done():
	}
	b.mu.Lock()
	if holder && freed == b.freed { // give resets the count when it replaces freed
		b.waiting--
	}
	return ctx.Err()
}

// give gives n of g's bytes back (all of them at most).
func (g *bodyGrant) give(n int64) {
	if g == nil {
		return
	}
	b := g.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, g.n)
	if n <= 0 {
		return
	}
	g.n -= n
	b.used -= n
	if g.n == 0 {
		b.holders--
	}
	// Every waiter wakes and counts itself again if it still waits.
	close(b.freed)
	b.freed, b.waiting = make(chan struct{}), 0
}

// release gives all of g's bytes back.
func (g *bodyGrant) release() {
	if g != nil {
		g.give(g.n)
	}
}

// formatSize writes n bytes as "64 MiB" when it is a whole number of MiB.
func formatSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

package jsonapi

import "sync"

// bodyPool keeps the buffers of released pages (Page.Release) for later
// bodies. A backfill reads thousands of bodies of the same few megabytes;
// allocating each one (zeroed, then garbage) was half the bytes a sync
// allocated, and reusing them saves about a sixth of its CPU
// (docs/benchmarks.md).
type bodyPool struct {
	mu   sync.Mutex
	free [][]byte
}

const (
	// maxPooledBodies bounds the buffers kept: about as many pages as a
	// walk has in flight.
	maxPooledBodies = 2
	// maxPooledBody is the largest buffer kept: a rare huge page is left
	// to the collector rather than held for the rest of the process.
	maxPooledBody = 32 << 20
)

// get returns an empty buffer of capacity at least size, a kept one when
// one is big enough.
func (p *bodyPool) get(size int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.free) - 1; i >= 0; i-- {
		if b := p.free[i]; cap(b) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return b[:0]
		}
	}
	return make([]byte, 0, size)
}

// put keeps b for a later body; b must not be used again by the caller,
// nor anything that refers to its bytes.
func (p *bodyPool) put(b []byte) {
	poison(b)
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxPooledBodies {
		p.free = append(p.free, b[:0])
	}
}

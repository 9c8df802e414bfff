package jsonapi

import (
	"context"
	"io"
	"net/http"
	"sync"
)

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

// errBodyTooLarge reports a body over Options.MaxBodyBytes.
type errBodyTooLarge struct{ limit int64 }

func (e errBodyTooLarge) Error() string {
	return "body larger than " + formatSize(e.limit) + ", the limit (USERSYNC_MAX_RESPONSE_BYTES)"
}

// readBody reads the whole body into a buffer from alloc, sized from
// Content-Length, whose capacity it takes from grant first. It never holds
// more than limit+1 bytes: a Content-Length over the limit is refused
// before reading, and a buffer grows by doubling, straight to limit+1 once
// doubling would reach the limit (so a growing buffer and its copy hold at
// most 1.5 × limit together).
func readBody(ctx context.Context, resp *http.Response, limit int64, alloc func(size int) []byte, grant *bodyGrant) ([]byte, error) {
	size := resp.ContentLength
	if size > limit {
		return nil, errBodyTooLarge{limit}
	}
	if size < 0 {
		size = 64 << 10
	}
	if err := grant.take(ctx, size+1); err != nil {
		return nil, err
	}
	buf := alloc(int(size) + 1)
	if err := grant.take(ctx, int64(cap(buf))-size-1); err != nil { // a kept buffer may be larger
		return nil, err
	}
	r := io.LimitReader(resp.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			grown, err := growBody(ctx, buf, limit, grant)
			if err != nil {
				return nil, err
			}
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errBodyTooLarge{limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// growBody returns a copy of buf with twice its capacity, or limit+1 when
// that is reached, taking the new capacity from grant and giving the old
// one back.
func growBody(ctx context.Context, buf []byte, limit int64, grant *bodyGrant) ([]byte, error) {
	next := 2 * int64(cap(buf))
	if next >= limit {
		next = limit + 1
	}
	if err := grant.take(ctx, next); err != nil {
		return nil, err
	}
	grown := make([]byte, len(buf), next)
	copy(grown, buf)
	grant.give(int64(cap(buf)))
	return grown, nil
}

package jsonapi

import (
	"context"
	"io"
	"net/http"
)

// errBodyTooLarge reports a body over Options.MaxBodyBytes.
type errBodyTooLarge struct{ limit int64 }

func (e errBodyTooLarge) Error() string {
	return "body larger than " + formatSize(e.limit) + ", the limit (USERSYNC_MAX_RESPONSE_BYTES)"
}

// readBody reads the whole body into a new buffer, sized from
// Content-Length, whose capacity it takes from grant first. The buffer is
// the page's alone: nothing writes to it once it is read, so what is
// decoded from it may refer to its bytes (normalize's rows do). It never holds
// more than limit+1 bytes: a Content-Length over the limit is refused
// before reading, and a buffer grows by doubling, straight to limit+1 once
// doubling would reach the limit (so a growing buffer and its copy hold at
// most 1.5 × limit together).
func readBody(ctx context.Context, resp *http.Response, limit int64, grant *bodyGrant) ([]byte, error) {
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
	buf := make([]byte, 0, size+1)
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

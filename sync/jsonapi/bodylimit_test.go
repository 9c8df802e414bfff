package jsonapi

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestHugeBodyRefusedEarly: a 50 MiB body against a 1 MiB limit fails at
// once, with or without Content-Length, naming the limit and its setting,
// without the client allocating the body (not parallel: it measures the
// bytes allocated).
func TestHugeBodyRefusedEarly(t *testing.T) {
	const limit, size = 1 << 20, 50 << 20
	chunk := bytes.Repeat([]byte(" "), 64<<10)
	for _, withLength := range []bool{true, false} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", MediaType)
			if withLength {
				w.Header().Set("Content-Length", strconv.Itoa(size))
			}
			for sent := 0; sent < size; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.MaxBodyBytes = limit })
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := c.Collection("users", Query{}).Next(context.Background())
		runtime.ReadMemStats(&after)
		var tooLarge errBodyTooLarge
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "body larger than 1 MiB, the limit (USERSYNC_MAX_RESPONSE_BYTES)") {
			t.Errorf("Content-Length %v: error %v", withLength, err)
		}
		if st := c.Stats(); st.Requests != 1 {
			t.Errorf("Content-Length %v: %d requests, want 1 (not retried)", withLength, st.Requests)
		}
		allocated := after.TotalAlloc - before.TotalAlloc
		if want := uint64(limit / 2); withLength && allocated > want {
			t.Errorf("with Content-Length: %d bytes allocated, want under %d (refused before reading)", allocated, want)
		}
		if want := uint64(7 * limit / 2); !withLength && allocated > want {
			t.Errorf("streamed: %d bytes allocated, want under %d (a buffer doubling up to the limit)", allocated, want)
		}
	}
}

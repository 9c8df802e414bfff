package apisim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// write sends a response body; truncate cuts it in half under the same
// headers, so the client meets an unexpected EOF.
func (s *Server) write(w http.ResponseWriter, endpoint string, hdr http.Header, status int, ctype string, body []byte, truncate bool) {
	h := w.Header()
	for name, v := range hdr {
		h[name] = v
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if truncate {
		body = body[:len(body)/2]
	}
	// A failed write means the client went away: there is no one to tell.
	// The body is JSON (or a fixed HTML page) whose strings are escaped.
	n, _ := w.Write(body) //nolint:gosec // G705: not HTML built from input

	s.stats.record(endpoint, status, int64(n), truncate)
}

// writeError sends a JSON:API error document.
func (s *Server) writeError(w http.ResponseWriter, endpoint string, hdr http.Header, e *apiError) {
	s.write(w, endpoint, hdr, e.status, "application/vnd.api+json", appendErrorDoc(nil, e), false)
}

// appendErrorDoc appends {"errors":[{id,title,detail,source}]}. The 415
// error says "details", as the real service's documentation shows.
func appendErrorDoc(dst []byte, e *apiError) []byte {
	dst = append(dst, `{"errors":[{"id":`...)
	dst = appendString(dst, e.id)
	dst = append(dst, `,"title":`...)
	dst = appendString(dst, e.title)
	if e.detail != "" {
		if e.status == 415 {
			dst = append(dst, `,"details":`...)
		} else {
			dst = append(dst, `,"detail":`...)
		}
		dst = appendString(dst, e.detail)
	}
	if e.param != "" {
		dst = append(dst, `,"source":{"parameter":`...)
		dst = appendString(dst, e.param)
		dst = append(dst, '}')
	}
	return append(dst, "}]}"...)
}

func methodError(r *http.Request) *apiError {
	if r.ContentLength != 0 && r.Header.Get("Content-Type") != "application/vnd.api+json" {
		return &apiError{status: 415, id: "unsupportedMediaType", title: "Unsupported Media Type",
			detail: "Expected Content-Type header to be 'application/vnd.api+json'."}
	}
	return &apiError{status: 405, id: "methodNotAllowed", title: "Method Not Allowed",
		detail: "The simulator serves GET only on " + r.URL.Path}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting %v: %w", d, ctx.Err())
	}
}

package jsonapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/usersync/usersync/sync/jsondoc"
)

// rawArray is a jsondoc.DataDecoder that returns the array as sent, its length
// found by encoding/json (which checks its syntax).
func rawArray(calls *atomic.Int32) jsondoc.DataDecoder[string] {
	return func(b []byte) (string, int, error) {
		calls.Add(1)
		dec := json.NewDecoder(bytes.NewReader(b))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", 0, err
		}
		return string(v), int(dec.InputOffset()), nil
	}
}

func TestPagesDecodeData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		decoded    string // what Page.Decoded must hold: "" when not decoded
		calls      int32
	}{
		{"array", `{"data":[{"type":"user","id":1}, {"type":"user","id":2}] ,"meta":{"count":2},"links":{"next":null}}`,
			`[{"type":"user","id":1}, {"type":"user","id":2}]`, 1},
		{"empty array", `{"data":[],"links":{}}`, `[]`, 1},
		{"data after links", `{"links":{"next":null},"data":[{"type":"user","id":3}]}`, `[{"type":"user","id":3}]`, 1},
		// The JSON decoder keeps the last of repeated members.
		{"data repeated", `{"data":[{"type":"user","id":1}],"data":[{"type":"user","id":2}]}`, `[{"type":"user","id":2}]`, 2},
		{"data null", `{"data":null,"meta":{}}`, "", 0},
		{"data one", `{"data":{"type":"user","id":1}}`, "", 0},
		// Included resources are checked, not decoded (Included stays nil).
		{"included", `{"data":[{"type":"user","id":1}],"included":[{"type":"team","id":7,"attributes":{}}],"links":{"next":null}}`,
			`[{"type":"user","id":1}]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeDoc(w, http.StatusOK, tc.body) })
			var calls atomic.Int32
			c := newClient(t, srv.URL, newFakeClock(t), nil)
			page, err := DecodeData(c.Collection("users", Query{}), rawArray(&calls)).Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if page.Decoded != tc.decoded {
				t.Fatalf("Decoded = %v, want %v", page.Decoded, tc.decoded)
			}
			if tc.decoded != "" && (len(page.Data) != 0 || page.Included != nil) {
				t.Fatalf("Data holds %d resources and Included %d next to Decoded", len(page.Data), len(page.Included))
			}
			if calls.Load() != tc.calls {
				t.Fatalf("decoder called %d times, want %d", calls.Load(), tc.calls)
			}
		})
	}
}

// TestPagesDecodeDataMalformed: a body the decoder refuses, or whose rest
// does not decode, is retried like a truncated body, then returned as a
// *DecodeError.
func TestPagesDecodeDataMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		decode     jsondoc.DataDecoder[string]
	}{
		{"array refused", `{"data":[{"type":"user","id":1]}`, nil},
		{"rest refused", `{"data":[],"links":{"next":5}}`, nil},
		{"rest truncated", `{"data":[{"type":"user","id":1}],"links":{"ne`, nil},
		{"included malformed", `{"data":[],"included":[{"type":"team","id":7,}]}`, nil},
		{"decoder error", `{"data":[]}`, func([]byte) (string, int, error) { return "", 0, errors.New("no") }},
		{"length past the body", `{"data":[]}`, func(b []byte) (string, int, error) { return "", len(b) + 1, nil }},
		{"length zero", `{"data":[]}`, func([]byte) (string, int, error) { return "", 0, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int32
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if requests.Add(1) == 1 {
					writeDoc(w, http.StatusOK, tc.body)
					return
				}
				writeDoc(w, http.StatusOK, `{"data":[{"type":"user","id":9}]}`)
			})
			var calls atomic.Int32
			decode := tc.decode
			if decode == nil {
				decode = rawArray(&calls)
			}
			c := newClient(t, srv.URL, newFakeClock(t), nil)
			page, err := DecodeData(c.Collection("users", Query{}), decode).Next(context.Background())
			if tc.decode != nil {
				// The decoder refuses every body: the retries run out.
				var de *jsondoc.DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v, want a *DecodeError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("the retry should have succeeded: %v", err)
			}
			if requests.Load() != 2 || page.Decoded != `[{"type":"user","id":9}]` {
				t.Fatalf("%d requests, Decoded %v", requests.Load(), page.Decoded)
			}
		})
	}
}

// TestPageRelease: a page's body is never reused while the page is held,
// and a released page's buffer takes a later page. The decoder's result is
// the array's bytes themselves, as the sync's decoder keeps strings of them.
func TestPageRelease(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		links := `{"next":null}`
		if n < 3 {
			links = fmt.Sprintf(`{"next":"%s/api/v2/users?n=%d"}`, "http://"+r.Host, n+1)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(pageBody(links, n))))
		writeDoc(w, http.StatusOK, pageBody(links, n))
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	pages := DecodeData(c.Collection("users", Query{}), func(b []byte) ([]byte, int, error) {
		end := bytes.IndexByte(b, ']') + 1
		return b[:end:end], end, nil
	})
	var got []*TypedPage[[]byte]
	var arrays []string // each page's array, copied when read
	for {
		p, err := pages.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		got = append(got, p)
		arrays = append(arrays, string(p.Decoded))
		if len(got) == 2 {
			p.Release() // the second page's buffer takes the third
		}
	}
	if len(got) != 4 {
		t.Fatalf("read %d pages, want 4", len(got))
	}
	backing := func(p *TypedPage[[]byte]) *byte { b := p.Decoded; return &b[:cap(b)][cap(b)-1] }
	if backing(got[2]) != backing(got[1]) {
		t.Error("the third page was not read into the released second page's buffer")
	}
	if backing(got[3]) == backing(got[0]) || backing(got[3]) == backing(got[2]) {
		t.Error("the fourth page was read into the buffer of a page not released")
	}
	for _, i := range []int{0, 2, 3} {
		if s := string(got[i].Decoded); s != arrays[i] {
			t.Errorf("page %d changed after it was read: %s, was %s", i+1, s, arrays[i])
		}
	}
	got[1].Release() // again: a no-op
}

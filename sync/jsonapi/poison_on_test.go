//go:build usersync_poison

package jsonapi

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// TestReleasePoisons: built with usersync_poison, releasing a page
// overwrites its body at once, so a value decoded from it that outlives
// the page (a row's string) no longer reads as sent. The sync's tests run
// under this tag (make test), so a row kept past its page's Release fails
// them loudly rather than corrupting a later write quietly.
func TestReleasePoisons(t *testing.T) {
	t.Parallel()
	body := `{"data": [{"id": 1, "type": "user", "attributes": {"title": "kept too long"}}], "links": {"next": null}}`
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) { writeDoc(w, http.StatusOK, body) })
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	pages := DecodeData(c.Collection("users", Query{}), func(b []byte) ([]byte, int, error) {
		end := bytes.LastIndexByte(b, ']') + 1
		return b[:end:end], end, nil
	})
	p, err := pages.Next(context.Background())
	if err != nil || p == nil {
		t.Fatalf("page: %v, %v", p, err)
	}
	kept := p.Decoded
	if !bytes.Contains(kept, []byte("kept too long")) {
		t.Fatalf("decoded %q", kept)
	}
	p.Release()
	if bytes.Contains(kept, []byte("kept too long")) || kept[0] != 0xDB {
		t.Errorf("after Release the kept bytes still read %q", kept)
	}
}

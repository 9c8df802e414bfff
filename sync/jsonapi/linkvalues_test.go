package jsonapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestNextLinkMustKeepWhatWasSent: a next link may move the cursor and lower
// the page size; one that changes a value the client sent, or adds one
// under a name the client uses, is refused with an error that shows none
// of it, and the page's NextURL carries the values sent instead, so its
// checkpoint holds only what the client sends.
func TestNextLinkMustKeepWhatWasSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		extra  string
		refuse bool
	}{
		{"&page%5Bafter%5D=eyJpZCI6Mn0&page%5Bsize%5D=50&session=S3CRET", false},
		{"&page%5Bafter%5D=c2&sort=-S3CRET", true},
		{"&page%5Bafter%5D=c2&filter%5BupdatedAt%5D=S3CRET", true},
		{"&page%5Bafter%5D=c2&filter%5Bid%5D=1", true},
		{"&page%5Bafter%5D=S3CRET%3Cscript%3E", true},
		{"&page%5Bafter%5D=c2&page%5Bsize%5D=101", true},
		{"&page%5Boffset%5D=S3CRET", true},
	} {
		var srvURL string
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("page[after]") {
				writeDoc(w, http.StatusOK, pageBody(`{}`, 3))
				return
			}
			writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+`/api/v2/users?`+r.URL.RawQuery+tc.extra+`"}`, 1, 2))
		})
		srvURL = srv.URL
		c := newClient(t, srv.URL, newFakeClock(t), nil)
		it := c.Collection("users", Query{}.Sort("updatedAt").PageSize(100))
		_, pages, err := walk(t, it)
		var nle *NextLinkError
		switch {
		case !tc.refuse && err != nil:
			t.Errorf("%s: %v, want it followed", tc.extra, err)
		case tc.refuse && (!errors.As(err, &nle) || strings.Contains(err.Error(), "S3CRET")):
			t.Errorf("%s: %v, want a *NextLinkError without the value", tc.extra, err)
		}
		if len(pages) == 0 {
			t.Fatalf("%s: no page", tc.extra)
		}
		cp, err := c.CheckpointURL("users", pages[0].NextURL)
		if strings.Contains(cp, "S3CRET") || (err == nil && !strings.Contains(cp, "sort=updatedAt")) {
			t.Errorf("%s: checkpoint %q, %v; want one with the values sent only", tc.extra, cp, err)
		}
	}
}

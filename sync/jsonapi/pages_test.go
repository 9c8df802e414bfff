package jsonapi

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// walk reads every page of it and returns the ids seen.
func walk(t *testing.T, it *Pages) ([]int64, []*Page, error) {
	t.Helper()
	var ids []int64
	var pages []*Page
	for range 100 {
		page, err := it.Next(context.Background())
		if err != nil {
			return ids, pages, err
		}
		if page == nil {
			return ids, pages, nil
		}
		pages = append(pages, page)
		for _, r := range page.Data {
			ids = append(ids, int64(r.ID))
		}
	}
	t.Fatal("the walk did not end after 100 pages")
	return nil, nil, nil
}

func TestPagesFollowNextLinksVerbatim(t *testing.T) {
	t.Parallel()
	for _, end := range []struct{ name, links string }{
		{"next absent", `{"first":"x"}`},
		{"next null", `{"next":null}`},
		{"next empty", `{"next":""}`},
		{"links absent", ``},
	} {
		t.Run(end.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			var srvURL string
			// Unsorted parameters, odd encodings and a cursor the client must
			// not touch; page[size] is not honoured (2 or 1 rows, not 1000).
			next2 := "/api/v2/users?zeta=1&page%5Bafter%5D=abc%2Bdef%3D%3D&page[size]=1000&alpha=%7Ex&filter%5BupdatedAt%5D=2026-11-22T10:15:00.123Z..inf"
			next3 := "/api/v2/users?page%5Bafter%5D=second&sort=updatedAt&count=false&page%5Bsize%5D=1000"
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				n := rec.add(r)
				switch n {
				case 1:
					writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+next2+`"}`, 1, 2))
				case 2:
					writeDoc(w, http.StatusOK, pageBody(`{"next":{"href":"`+srvURL+next3+`"}}`, 3))
				default:
					body := pageBody(`{"next":null}`, 4)
					if end.links == `` {
						body = `{"data":[{"type":"user","id":4}]}`
					} else {
						body = pageBody(end.links, 4)
					}
					writeDoc(w, http.StatusOK, body)
				}
			})
			srvURL = srv.URL
			c := newClient(t, srv.URL, newFakeClock(t), nil)
			from := time.Date(2026, 11, 22, 10, 15, 0, 123e6, time.UTC)
			ids, pages, err := walk(t, c.Collection("users", Query{}.PageSize(1000).Sort("updatedAt").Filter("updatedAt", Range(from, time.Time{}))))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ids); got != 4 || ids[3] != 4 {
				t.Errorf("ids %v", ids)
			}
			reqs := rec.all()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for i, want := range []string{next2, next3} {
				if got := reqs[i+1].Path + "?" + reqs[i+1].RawQuery; got != want {
					t.Errorf("request %d = %s\nwant verbatim %s", i+2, got, want)
				}
				if pages[i].NextURL != srv.URL+want {
					t.Errorf("page %d NextURL = %s", i+1, pages[i].NextURL)
				}
				assertHeaders(t, reqs[i+1].Header)
			}
			if pages[2].NextURL != "" || pages[2].Number != 3 {
				t.Errorf("last page: next %q number %d", pages[2].NextURL, pages[2].Number)
			}
		})
	}
}

func TestPagesRefuseNextLinkToOtherHost(t *testing.T) {
	t.Parallel()
	var other recorder
	otherSrv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		writeDoc(w, http.StatusOK, pageBody(`{}`, 9))
	})
	otherHost := strings.Replace(otherSrv.URL, "127.0.0.1", "localhost", 1)
	for name, link := range map[string]string{
		"other host":         otherSrv.URL + "/api/v2/users?page%5Bafter%5D=x&access_token=" + secretAccess,
		"same ip other name": otherHost + "/api/v2/users",
		"other scheme":       "", // filled below with https on the same host
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var srvURL string
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				next := link
				if next == "" {
					next = strings.Replace(srvURL, "http://", "https://", 1) + "/api/v2/users?page=2"
				}
				writeDoc(w, http.StatusOK, pageBody(`{"next":"`+next+`"}`, 1))
			})
			srvURL = srv.URL
			c := newClient(t, srv.URL, newFakeClock(t), nil)
			it := c.Collection("users", Query{})
			page, err := it.Next(context.Background())
			if err != nil || page == nil {
				t.Fatalf("first page: %v", err)
			}
			for range 2 { // the refusal is final
				_, err = it.Next(context.Background())
				var nle *NextLinkError
				if !errors.As(err, &nle) {
					t.Fatalf("Next = %v, want a *NextLinkError", err)
				}
				if strings.Contains(err.Error(), secretAccess) {
					t.Errorf("error leaks the token: %s", err)
				}
			}
			if other.count() != 0 {
				t.Errorf("the other host got %d requests", other.count())
			}
		})
	}
}

func TestPagesResolveRelativeAndRefuseLoops(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1:
			writeDoc(w, http.StatusOK, pageBody(`{"next":"/api/v2/users?page%5Bafter%5D=b"}`, 1))
		default: // repeats itself
			writeDoc(w, http.StatusOK, pageBody(`{"next":"?page%5Bafter%5D=b"}`, 2))
		}
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	ids, pages, err := walk(t, c.Collection("users", Query{}))
	var nle *NextLinkError
	if !errors.As(err, &nle) || !strings.Contains(err.Error(), "repeats") {
		t.Fatalf("walk error = %v, want a *NextLinkError about a loop", err)
	}
	if len(ids) != 2 || pages[0].NextURL != srv.URL+"/api/v2/users?page%5Bafter%5D=b" {
		t.Errorf("ids %v, first next %q", ids, pages[0].NextURL)
	}
	if rec.count() != 2 {
		t.Errorf("%d requests", rec.count())
	}
}

func TestResumeFromStoredNextURL(t *testing.T) {
	t.Parallel()
	var rec recorder
	var srvURL string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch rec.add(r) {
		case 1:
			writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+`/api/v2/users?page%5Bafter%5D=c3&page%5Bsize%5D=2"}`, 5, 6))
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 7))
		}
	})
	srvURL = srv.URL
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	stored := srv.URL + "/api/v2/users?sort=updatedAt&page%5Bafter%5D=c2&page%5Bsize%5D=2"
	it := c.Resume(stored)
	if it.NextURL() != stored {
		t.Errorf("NextURL() = %q", it.NextURL())
	}
	ids, pages, err := walk(t, it)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || len(pages) != 2 {
		t.Errorf("ids %v", ids)
	}
	if r := rec.all()[0]; r.RawQuery != "sort=updatedAt&page%5Bafter%5D=c2&page%5Bsize%5D=2" || r.Path != "/api/v2/users" {
		t.Errorf("resumed request %s?%s", r.Path, r.RawQuery)
	}
	if st := c.Stats(); st.ByEndpoint["users"] != 2 {
		t.Errorf("ByEndpoint %v", st.ByEndpoint)
	}

	// A stored URL on another host, or not a URL at all, is refused.
	for _, bad := range []string{"https://evil.example/api/v2/users?page%5Bafter%5D=x", "/api/v2/users", "%zz"} {
		_, err := c.Resume(bad).Next(context.Background())
		var nle *NextLinkError
		if !errors.As(err, &nle) {
			t.Errorf("Resume(%q).Next = %v, want a *NextLinkError", bad, err)
		}
	}
	// An empty stored URL means the walk had ended.
	if page, err := c.Resume("").Next(context.Background()); page != nil || err != nil {
		t.Errorf("Resume(\"\").Next = %v, %v", page, err)
	}
	if rec.count() != 2 {
		t.Errorf("%d requests, want 2", rec.count())
	}
}

// endlessServer serves pages forever and counts the requests.
func endlessServer(t *testing.T, served *atomic.Int64) string {
	t.Helper()
	var srvURL string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		writeDoc(w, http.StatusOK, pageBody(`{"next":"`+srvURL+`/api/v2/users?page=`+strconv.FormatInt(n+1, 10)+`"}`, int(n)))
	})
	srvURL = srv.URL
	return srv.URL
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func TestPrefetchIsBoundedOrderedAndCancellable(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srvURL := endlessServer(t, &served)
	c := newClient(t, srvURL, newFakeClock(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	const depth = 3
	p := Prefetch(ctx, c.Collection("users", Query{}), depth)
	// Nobody reads: the goroutine fetches depth pages, then blocks.
	eventually(t, "the buffer to fill", func() bool { return len(p.results) == depth-1 && served.Load() == depth })
	next, stop := iter.Pull2(p.Pages())
	defer stop()
	for want := int64(1); want <= 5; want++ {
		page, err, ok := next()
		if !ok || err != nil || page == nil || int64(page.Data[0].ID) != want {
			t.Fatalf("result %d = %v, %v, %v", want, page, err, ok)
		}
	}
	eventually(t, "the buffer to refill", func() bool { return served.Load() == 5+depth })
	cancel()
	// What was fetched may still be read; then the walk ends with the
	// context's error, never as if it had reached its last page.
	done := make(chan error, 1)
	go func() {
		for {
			page, err, ok := next()
			if !ok {
				done <- errors.New("the walk ended without an error")
				return
			}
			if err != nil {
				done <- err
				return
			}
			if page == nil {
				done <- errors.New("a nil page without an error")
				return
			}
		}
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled walk ended with %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the walk did not end after cancel")
	}
	if n := served.Load(); n > 5+depth+1 {
		t.Errorf("%d pages fetched for 5 consumed with depth %d", n, depth)
	}
}

// TestPrefetchStopsWhenTheReaderLeaves: breaking out of Pages stops the
// fetching goroutine, with no cancel of the caller's.
func TestPrefetchStopsWhenTheReaderLeaves(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srvURL := endlessServer(t, &served)
	c := newClient(t, srvURL, newFakeClock(t), nil)
	p := Prefetch(context.Background(), c.Collection("users", Query{}), 2)
	for page, err := range p.Pages() {
		if err != nil || page.Data[0].ID != 1 {
			t.Fatalf("first result %v, %v", page, err)
		}
		break
	}
	eventually(t, "the goroutine to close the channel", func() bool {
		select {
		case _, ok := <-p.results:
			return !ok
		default:
			return false
		}
	})
	if n := served.Load(); n > 4 {
		t.Errorf("%d pages fetched after the reader left at page 1 with depth 2", n)
	}
}

// TestPrefetchStop: Stop on a walk nobody read ends its goroutine before it
// returns (no request in flight after it) and gives the bodies of the pages
// fetched ahead back to the client.
func TestPrefetchStop(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	srvURL := endlessServer(t, &served)
	c := newClient(t, srvURL, newFakeClock(t), nil)
	p := Prefetch(context.Background(), c.Collection("users", Query{}), 2)
	// The client counts a request once its body is read whole; from then
	// the goroutine holds that page (nothing after the read looks at the
	// context) until it can send it.
	eventually(t, "the walk to fetch ahead", func() bool { return c.Stats().Requests == 2 && len(p.results) == 1 })
	p.Stop()
	select {
	case _, ok := <-p.results:
		if ok {
			t.Fatal("a page left unread after Stop")
		}
	default:
		t.Fatal("the walk's goroutine still runs after Stop")
	}
	c.bodies.mu.Lock()
	kept := len(c.bodies.free)
	c.bodies.mu.Unlock()
	if kept != 2 {
		t.Errorf("%d bodies back in the pool after Stop, want the 2 pages fetched ahead", kept)
	}
	p.Stop()
	for page, err := range p.Pages() {
		if page != nil || err == nil {
			t.Errorf("a stopped walk read: %v, %v", page, err)
		}
	}
}

func TestPrefetchEndsWithErrorOrEnd(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if rec.add(r) == 1 {
			writeDoc(w, http.StatusOK, pageBody(`{"next":"https://elsewhere.example/x"}`, 1))
			return
		}
		writeDoc(w, http.StatusOK, pageBody(`{}`, 2))
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	var got []pageResult[Untyped]
	for page, err := range Prefetch(context.Background(), c.Collection("users", Query{}), 0).Pages() {
		got = append(got, pageResult[Untyped]{page, err})
	}
	var nle *NextLinkError
	if len(got) != 2 || got[0].page == nil || got[0].err != nil || got[1].page != nil || !errors.As(got[1].err, &nle) {
		t.Errorf("results %+v", got)
	}
	got = nil
	p := Prefetch(context.Background(), c.Collection("users", Query{}), 2)
	for page, err := range p.Pages() {
		got = append(got, pageResult[Untyped]{page, err})
	}
	if len(got) != 1 || got[0].err != nil || got[0].page.Data[0].ID != 2 {
		t.Errorf("results %+v", got)
	}
	// A second loop finds the walk over: it must not pass for a walk
	// with no page.
	got = nil
	for page, err := range p.Pages() {
		got = append(got, pageResult[Untyped]{page, err})
	}
	if len(got) != 1 || got[0].page != nil || !errors.Is(got[0].err, errReadTwice) {
		t.Errorf("second loop: results %+v", got)
	}
}

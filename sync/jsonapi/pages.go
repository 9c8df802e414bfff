package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"

	"github.com/usersync/usersync/sync/jsondoc"
)

// Untyped is the Decoded of a page whose "data" the client decoded itself
// (no DecodeData): nothing.
type Untyped = struct{}

// Page is one page of a collection walked without DecodeData.
type Page = TypedPage[Untyped]

// TypedPage is one page of a collection whose "data" array, when it is one,
// went to a jsondoc.DataDecoder[T] (see DecodeData).
type TypedPage[T any] struct {
	// Document is the decoded page: Data, Included, Links, Meta.
	jsondoc.Document
	// Decoded is what the walk's DataDecoder made of "data", or T's zero
	// value when "data" was not an array (Document.Data holds it then).
	Decoded T
	// Number counts the pages of this iterator from 1.
	Number int
	// URL is the URL the page was fetched from (page[size] possibly halved
	// after a 502 or 504).
	URL string
	// NextURL is the next link of the page, verbatim (resolved only if it
	// was relative), or "" on the last page; when the link was refused for
	// changing what the client sent (the walk's next call says so), the
	// values sent are put back in it. It is not sanitized: store
	// Client.CheckpointURL of it, and pass that to Client.Resume to continue
	// later.
	NextURL string

	body []byte    // what the page was decoded from, until released
	pool *bodyPool // where Release puts body
}

// Release gives the page's body back to the client, to read a later page
// into. Call it once nothing refers to the page's data any more, decoded
// values included: a DataDecoder's result may refer to the body's bytes,
// which the later page overwrites. Pages not released are left to the
// collector; releasing is only worth it on long walks. Release is
// idempotent; no field of the page may be used after it.
func (p *TypedPage[T]) Release() {
	if p.body != nil {
		p.pool.put(p.body)
		p.body = nil
	}
}

// Pages iterates over the pages of a collection by following links.next.
// Only the first request is built from the Query; every later one is the
// server's next link, as sent. A Pages is not safe for concurrent use; use
// Prefetch to fetch ahead from another goroutine.
type Pages = TypedPages[Untyped]

// TypedPages is Pages whose "data" arrays go to a jsondoc.DataDecoder[T]
// (see DecodeData).
type TypedPages[T any] struct {
	walkState
	decode jsondoc.DataDecoder[T] // decodes "data" in place of the client, when set
}

// walkState is the state of a walk, whatever decodes its pages.
type walkState struct {
	c        *Client
	resource string
	next     string // URL of the next request; "" when done
	built    bool   // next was built by the client from a Query
	err      error  // a permanent error, returned by every later call
	number   int
	// sent is the query of the walk's first request: a next link may
	// change only its cursor and page size (checkSent).
	sent url.Values
}

// DecodeData returns p with every later page's "data" array going to decode
// (see jsondoc.DataDecoder), its result in TypedPage.Decoded; p must not be
// used after it. Pages whose "data" is not an array are decoded as usual. A
// decoder's error means the body is malformed: the client retries the
// request as it does a truncated body, then returns the error. The
// decoder's result may refer to the body: the client never writes to it or
// reuses it until the page is released (see TypedPage.Release).
func DecodeData[T any](p *Pages, decode jsondoc.DataDecoder[T]) *TypedPages[T] {
	return &TypedPages[T]{walkState: p.walkState, decode: decode}
}

// Collection returns an iterator over a collection ("users", "teams",
// "roles", "profiles") filtered and sorted by q. An invalid q is reported by
// the first Next.
func (c *Client) Collection(resource string, q Query) *Pages {
	p := &Pages{walkState: walkState{c: c, resource: resource, built: true}}
	p.next, p.err = c.CollectionURL(resource, q)
	if p.err != nil {
		p.err = fmt.Errorf("building %s query: %w", resource, p.err)
	}
	p.sent = queryOf(p.next)
	return p
}

// Resume returns an iterator that continues from nextURL, a checkpoint
// stored earlier (Client.CheckpointURL of a Page.NextURL; pass a stored
// value through CheckpointURL again rather than trust it). The URL is checked as a next link is (on the base URL's
// origin and under its path). An empty nextURL means the walk had ended: Next returns
// no page.
func (c *Client) Resume(nextURL string) *Pages {
	p := &Pages{walkState: walkState{c: c, resource: "resumed", next: nextURL, sent: queryOf(nextURL)}}
	if nextURL != "" {
		if u, err := url.Parse(nextURL); err == nil {
			p.resource = c.endpoint(u)
		}
	}
	return p
}

// queryOf is the query of a URL, empty when it does not parse.
func queryOf(raw string) url.Values {
	u, err := url.Parse(raw)
	if err != nil {
		return url.Values{}
	}
	q, _ := url.ParseQuery(u.RawQuery) // the parameters that parse
	return q
}

// NextURL returns the URL the next call to Next will fetch, "" when the
// walk is over.
func (p *TypedPages[T]) NextURL() string { return p.next }

// Next fetches the next page. It returns (nil, nil) once the last page has
// been returned. After an error from the server, calling Next again retries
// the same page; errors about the query or a refused next link are final.
func (p *TypedPages[T]) Next(ctx context.Context) (*TypedPage[T], error) {
	if p.err != nil {
		return nil, p.err
	}
	if p.next == "" {
		return nil, nil
	}
	reqURL := p.next
	if !p.built {
		checked, err := p.c.checkLink(reqURL, nil)
		if err != nil {
			p.err = fmt.Errorf("fetching %s page %d: %w", p.resource, p.number+1, err)
			return nil, p.err
		}
		reqURL = checked
	}
	var decoded T // of the attempt that returned the document
	doc, body, fetched, err := p.c.fetch(ctx, reqURL, func(b []byte) (*jsondoc.Document, error) {
		doc, d, err := jsondoc.DecodeWith(b, p.decode)
		decoded = d
		return doc, err
	})
	if err != nil {
		return nil, fmt.Errorf("fetching %s page %d: %w", p.resource, p.number+1, err)
	}
	next, err := p.resolveNext(string(doc.Links.Next), fetched)
	if err == nil && next != "" {
		next, err = checkSent(next, p.sent)
	}
	if err != nil {
		p.err = fmt.Errorf("fetching %s page %d: %w", p.resource, p.number+2, err)
	}
	p.number++
	p.next, p.built = next, false
	return &TypedPage[T]{Document: *doc, Decoded: decoded, Number: p.number, URL: fetched, NextURL: next, body: body, pool: &p.c.bodies}, nil
}

// resolveNext returns the next link of a page, resolved against the page's
// URL when relative. A link that repeats the page just fetched is refused,
// as following it would loop forever.
func (p *walkState) resolveNext(link, fetched string) (string, error) {
	if link == "" {
		return "", nil
	}
	ref, err := url.Parse(fetched)
	if err != nil {
		return "", &NextLinkError{URL: "(unparsable URL)", Reason: "the page URL does not parse"}
	}
	u, err := url.Parse(link)
	if err != nil {
		return link, &NextLinkError{URL: "(unparsable URL)", Reason: "not a valid URL"}
	}
	if !u.IsAbs() {
		link = ref.ResolveReference(u).String()
	}
	if link == fetched {
		return link, &NextLinkError{URL: sanitizeURL(link), Reason: "it repeats the page just fetched"}
	}
	return link, nil
}

// Prefetched is a walk that Prefetch fetches ahead of its reader.
type Prefetched[T any] struct {
	results <-chan pageResult[T]
	stop    context.CancelFunc
	// cut is why the walk stopped before its last page without sending an
	// error (the context's cause); set before results is closed.
	cut  error
	read bool // Pages was ranged over
}

// errReadTwice ends a second loop over Pages, which would otherwise find
// the channel closed and look like a walk with no page.
var errReadTwice = errors.New("reading a prefetched walk a second time")

type pageResult[T any] struct {
	page *TypedPage[T]
	err  error
}

// Prefetch starts walking it in a new goroutine, fetching up to depth pages
// ahead of the reader (depth < 1 means 1), so page N+1 downloads while page
// N is being written. Read the pages with Pages. The walk stops when ctx is
// cancelled or the Pages loop ends, whichever comes first: a walk that is
// neither read nor cancelled waits forever (Stop ends one that will not be
// read). it must not be used by anyone else meanwhile.
func Prefetch[T any](ctx context.Context, it *TypedPages[T], depth int) *Prefetched[T] {
	depth = max(depth, 1)
	ctx, stop := context.WithCancel(ctx) //nolint:gosec // kept in p.stop, which Stop and the end of Pages call
	// The goroutine holds one page while it waits to send, so a buffer of
	// depth-1 keeps at most depth pages fetched ahead.
	out := make(chan pageResult[T], depth-1)
	p := &Prefetched[T]{results: out, stop: stop}
	go func() {
		defer close(out)
		for {
			page, err := it.Next(ctx)
			if page == nil && err == nil {
				return
			}
			select {
			case out <- pageResult[T]{page, err}:
			case <-ctx.Done():
				if page != nil {
					page.Release() // never sent: nobody else has it
				}
				p.cut = context.Cause(ctx)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// Stop ends the walk and waits for its goroutine, so that no request of
// the walk is in flight once it returns; pages fetched and not read are
// released. The Pages loop does it when it ends; call it for a walk that
// may never be read, never during that loop. A second call does nothing.
func (p *Prefetched[T]) Stop() {
	p.stop()
	for r := range p.results {
		if r.page != nil {
			r.page.Release()
		}
	}
}

// Pages yields the walk's pages in order, each with a nil error, and then,
// unless the walk went past its last page, one error: the fetch's that
// ended it, or the context's when it was cancelled first. A loop that ends
// without an error has therefore seen every page. However the loop ends,
// the walk is stopped as Stop does. A second loop yields only an error.
func (p *Prefetched[T]) Pages() iter.Seq2[*TypedPage[T], error] {
	return func(yield func(*TypedPage[T], error) bool) {
		if p.read {
			yield(nil, errReadTwice)
			return
		}
		p.read = true
		defer p.Stop()
		for r := range p.results {
			if !yield(r.page, r.err) || r.err != nil {
				return
			}
		}
		if p.cut != nil {
			yield(nil, fmt.Errorf("fetching the next page: %w", p.cut))
		}
	}
}

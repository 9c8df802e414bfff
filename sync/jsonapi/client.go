package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

// MediaType is the JSON:API media type, sent in Accept.
const MediaType = "application/vnd.api+json"

// apiPrefix is the path of the API under the base URL.
const apiPrefix = "/api/v2/"

// Clock tells the time and sleeps. Tests inject a fake one so that backoff
// and rate-limit waits take no real time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real Clock.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep implements Clock; it honours ctx cancellation.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Options configures a Client. BaseURL and Auth are required; every other
// field has a default, applied when it is zero.
type Options struct {
	// BaseURL is the scheme and host of the API ("https://api.example.com"),
	// optionally with a path prefix; requests go to BaseURL + "/api/v2/...".
	// Next links and redirects must stay on its scheme, host and port, and
	// under its path (segment by segment, without dot segments).
	BaseURL string
	// BaseURLSetting names what holds BaseURL, such as USERSYNC_API_URL,
	// in the error of an API that never answers. Default: "its URL".
	BaseURLSetting string
	// Auth supplies the bearer token (StaticToken or an *OAuth).
	Auth Authenticator
	// UserAgent is sent as User-Agent. Default "usersync-jsonapi".
	UserAgent string
	// Logger receives a debug record per request. Default: discard.
	Logger *slog.Logger
	// HTTPClient sends the requests. Default: a new http.Client.
	HTTPClient *http.Client
	// Clock tells the time and sleeps. Default SystemClock.
	Clock Clock
	// RequestTimeout bounds each attempt, body included. Default 60s.
	RequestTimeout time.Duration
	// MaxAttempts bounds the attempts of a request that keeps failing with a
	// retryable error (5xx, network, bad body); it also bounds the 429 waits
	// of one request. Default 5.
	MaxAttempts int
	// MaxRetryTime bounds the total time spent retrying one request (429
	// waits aside). Default 2m.
	MaxRetryTime time.Duration
	// BackoffBase is the first retry delay, doubled on each attempt and
	// jittered. Default 500ms.
	BackoffBase time.Duration
	// BackoffMax caps one retry delay. Default 30s.
	BackoffMax time.Duration
	// PageSizeFloor is the smallest page[size] the client halves down to on
	// 502 or 504. Default 10.
	PageSizeFloor int
	// MaxRateLimitWait is the longest wait the client sleeps for a rate
	// limit; a longer one returns a *RateLimitError. Default 60s.
	MaxRateLimitWait time.Duration
	// RateLimitReserve is the remaining-request count at or below which the
	// client spreads its requests until the window resets. Default 20.
	RateLimitReserve int
	// Budget is the share of the token's rate limit (x-ratelimit-limit) the
	// client may use, in (0, 1]; the rest is left to the token owner's other
	// tools: the client never lets x-ratelimit-remaining fall below
	// (1 - Budget) × limit, and waits for the reset instead. 0 means 1.
	// Without a readable limit or reset the floor still holds (see
	// DefaultRateLimit and DefaultRateWindow).
	Budget float64
	// MaxBodyBytes bounds a response body. Default 64 MiB.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight bounds the bytes of all the response bodies
	// being read or decoded at once, the client's requests together: a
	// body waits for room, or fails its attempt (retried) when waiting
	// could not end. At least MaxBodyBytes; default 2 × MaxBodyBytes, as a
	// body read without Content-Length holds up to 1.5 × MaxBodyBytes while
	// its buffer grows.
	MaxBodyBytesInFlight int64
	// Bodies, when set, is the budget of the bodies read at once, shared
	// with other clients (a worker's accounts share one), in place of a
	// budget of MaxBodyBytesInFlight of the client's own; its limit must be
	// at least MaxBodyBytes.
	Bodies *BodyBudget
}

// Client talks to the API. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	auth  Authenticator
	log   *slog.Logger
	http  *http.Client
	clock Clock
	opts  Options
	stats stats
	rate  rateState
	// bodies keeps the buffers of released pages (see Page.Release).
	bodies bodyPool
	// budget bounds the bytes of the bodies being read (MaxBodyBytesInFlight).
	budget *BodyBudget
}

// NewClient checks opts, applies the defaults and returns a Client.
func NewClient(opts Options) (*Client, error) {
	base, err := url.Parse(opts.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errors.New("jsonapi: Options.BaseURL must be an absolute http or https URL")
	}
	if base.User != nil || base.RawQuery != "" {
		return nil, errors.New("jsonapi: Options.BaseURL must not hold credentials or a query")
	}
	if opts.Auth == nil {
		return nil, errors.New("jsonapi: Options.Auth is required (StaticToken or NewOAuth)")
	}
	if err := checkNonNegative(opts); err != nil {
		return nil, err
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawPath = ""
	opts = withDefaults(opts)
	budget := opts.Bodies
	if budget == nil {
		budget = NewBodyBudget(opts.MaxBodyBytesInFlight)
	}
	if budget.Limit() < opts.MaxBodyBytes {
		return nil, errors.New("jsonapi: Options.MaxBodyBytesInFlight must be at least MaxBodyBytes (and so must the limit of Options.Bodies)")
	}
	return &Client{base: base, auth: opts.Auth, log: opts.Logger,
		http:  underBaseRedirects(sameOriginRedirects(opts.HTTPClient), base.EscapedPath()),
		clock: opts.Clock, opts: opts, budget: budget}, nil
}

func checkNonNegative(o Options) error {
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"RequestTimeout", int64(o.RequestTimeout)}, {"MaxRetryTime", int64(o.MaxRetryTime)},
		{"BackoffBase", int64(o.BackoffBase)}, {"BackoffMax", int64(o.BackoffMax)},
		{"MaxRateLimitWait", int64(o.MaxRateLimitWait)}, {"MaxAttempts", int64(o.MaxAttempts)},
		{"PageSizeFloor", int64(o.PageSizeFloor)}, {"RateLimitReserve", int64(o.RateLimitReserve)},
		{"MaxBodyBytes", o.MaxBodyBytes}, {"MaxBodyBytesInFlight", o.MaxBodyBytesInFlight},
	} {
		if f.value < 0 {
			return fmt.Errorf("jsonapi: Options.%s must not be negative", f.name)
		}
	}
	if o.Budget < 0 || o.Budget > 1 {
		return fmt.Errorf("jsonapi: Options.Budget must be in (0, 1], or 0 for all of it")
	}
	return nil
}

func withDefaults(o Options) Options {
	if o.UserAgent == "" {
		o.UserAgent = "usersync-jsonapi"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	setDefault(&o.RequestTimeout, 60*time.Second)
	setDefault(&o.MaxAttempts, 5)
	setDefault(&o.MaxRetryTime, 2*time.Minute)
	setDefault(&o.BackoffBase, 500*time.Millisecond)
	setDefault(&o.BackoffMax, 30*time.Second)
	setDefault(&o.PageSizeFloor, 10)
	setDefault(&o.MaxRateLimitWait, 60*time.Second)
	setDefault(&o.RateLimitReserve, 20)
	setDefault(&o.MaxBodyBytes, 64<<20)
	setDefault(&o.MaxBodyBytesInFlight, 2*o.MaxBodyBytes)
	return o
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// CollectionURL returns the URL of the first page of a collection
// ("users", "teams", "roles", "profiles") with q encoded.
func (c *Client) CollectionURL(resource string, q Query) (string, error) {
	if resource == "" || strings.ContainsAny(resource, "?#") {
		return "", &QueryError{Param: "resource", Reason: "invalid resource path " + quoteShort(resource)}
	}
	query, err := q.Encode()
	if err != nil {
		return "", err
	}
	u := *c.base
	u.Path = c.base.Path + apiPrefix + strings.TrimPrefix(resource, "/")
	u.RawQuery = query
	return u.String(), nil
}

// Get fetches one document, such as "users/42", with q encoded (q's
// count=false default included). Use Collection to walk a collection.
func (c *Client) Get(ctx context.Context, resource string, q Query) (*jsondoc.Document, error) {
	u, err := c.CollectionURL(resource, q)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	doc, _, _, err := c.fetch(ctx, u, jsondoc.Decode)
	return doc, err
}

// checkLink parses a link from the server (or a stored one), resolves it
// against ref when it is relative, and refuses one off the base URL's
// origin (scheme, host, port) or path (outsideBase).
func (c *Client) checkLink(link string, ref *url.URL) (string, error) {
	u, err := url.Parse(link)
	if err != nil {
		return "", &NextLinkError{URL: "(unparsable URL)", Reason: "not a valid URL"}
	}
	if ref != nil && !u.IsAbs() && u.Host == "" {
		u = ref.ResolveReference(u)
	}
	switch {
	case !u.IsAbs():
		return "", &NextLinkError{URL: sanitizeURL(link), Reason: "not an absolute URL"}
	case !c.sameOrigin(u):
		return "", &NextLinkError{URL: sanitizeURL(link),
			Reason: "its scheme, host or port differ from the base URL's " + origin(c.base)}
	case u.User != nil:
		return "", &NextLinkError{URL: sanitizeURL(link), Reason: "it holds credentials"}
	}
	if why := outsideBase(c.base.EscapedPath(), u); why != "" {
		return "", &NextLinkError{URL: sanitizeURL(link), Reason: why}
	}
	return u.String(), nil
}

// endpoint names the collection of a request URL for Stats: "users" for
// /api/v2/users and /api/v2/users/42.
func (c *Client) endpoint(u *url.URL) string {
	p := strings.TrimPrefix(u.Path, c.base.Path)
	if rest, ok := strings.CutPrefix(p, apiPrefix); ok {
		p = rest
	}
	p = strings.Trim(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[:i]
	}
	if p == "" {
		return "/"
	}
	return p
}

// send performs one attempt: it gets a token, sends the request and reads
// the whole body into bytes of grant. It returns the response (body
// closed) and the body.
func (c *Client) send(ctx context.Context, reqURL, token string, grant *bodyGrant) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reqURL, nil)
	if err != nil {
		return nil, nil, &TransportError{Method: http.MethodGet, URL: sanitizeURL(reqURL), Err: errors.New("invalid request URL")}
	}
	req.Header.Set("Accept", MediaType)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", c.opts.UserAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, &TransportError{Method: req.Method, URL: sanitizeURL(reqURL), Err: stripURLError(err)}
	}
	defer resp.Body.Close()
	body, err := readBody(ctx, resp, c.opts.MaxBodyBytes, c.bodies.get, grant)
	if err != nil {
		return resp, body, &TransportError{Method: req.Method, URL: sanitizeURL(reqURL), Err: fmt.Errorf("reading body: %w", err)}
	}
	return resp, body, nil
}

// stripURLError drops the *url.Error wrapper, whose message repeats the full
// request URL; the caller puts a sanitized one instead.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

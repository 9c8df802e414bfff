package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

// verdict is what the client does after one attempt.
type verdict int

const (
	verdictDone        verdict = iota // return the document or the error
	verdictRetry                      // retry with backoff (5xx, network, bad body)
	verdictReauth                     // 401: refresh the token once and retry
	verdictRateLimited                // 429: wait as the headers say and retry
)

// attempt is the result of one attempt.
type attempt struct {
	verdict verdict
	doc     *jsondoc.Document
	body    []byte // the body doc was decoded from
	err     error
	status  int
	header  http.Header
	token   string
}

// docDecoder decodes a whole response body (jsondoc.Decode, or a walk's
// jsondoc.DecodeWith).
type docDecoder func(body []byte) (*jsondoc.Document, error)

// fetch GETs reqURL with retries and decodes the document. It returns the
// body the document was decoded from and the URL finally requested, which
// differs from reqURL when a 502 or 504 made it halve page[size].
func (c *Client) fetch(ctx context.Context, reqURL string, decode docDecoder) (*jsondoc.Document, []byte, string, error) {
	endpoint := "/"
	if u, err := url.Parse(reqURL); err == nil {
		endpoint = c.endpoint(u)
	}
	start := c.clock.Now()
	var failures, waits int
	reauthed, answered := false, false
	for try := 0; ; try++ {
		if try > 0 {
			c.stats.retries.Add(1)
		}
		a := c.attempt(ctx, reqURL, endpoint, try, decode)
		answered = answered || a.status != 0
		var err error
		switch a.verdict {
		case verdictDone:
			return a.doc, a.body, reqURL, a.err
		case verdictReauth:
			if reauthed || !c.auth.Invalidate(a.token) {
				return nil, nil, reqURL, &AuthError{StatusCode: a.status, Err: a.err}
			}
			reauthed = true
			continue
		case verdictRateLimited:
			waits++
			err = c.waitRateLimit(ctx, reqURL, a, waits)
		case verdictRetry:
			failures++
			reqURL, err = c.backoff(ctx, reqURL, a, failures, start, answered)
		}
		if err != nil {
			return nil, nil, reqURL, err
		}
	}
}

// attempt sends one request and classifies the outcome.
func (c *Client) attempt(ctx context.Context, reqURL, endpoint string, try int, decode docDecoder) attempt {
	paced, err := c.pace(ctx, reqURL)
	if err != nil {
		return attempt{verdict: verdictDone, err: err}
	}
	defer paced() // on every return; after the first call it does nothing
	token, err := c.auth.Token(ctx)
	if err != nil {
		return attempt{verdict: verdictDone, err: fmt.Errorf("getting access token: %w", err)}
	}
	began := c.clock.Now()
	grant := c.budget.grant() // given back once the body is decoded (classify)
	defer grant.release()
	resp, body, err := c.send(ctx, reqURL, token, grant) //nolint:bodyclose // send reads and closes the body itself
	a := attempt{token: token}
	if resp != nil {
		a.status, a.header = resp.StatusCode, resp.Header
		if c.rate.observe(resp.Header, c.clock.Now()) && c.rate.toldBad.CompareAndSwap(false, true) {
			c.log.DebugContext(ctx, "x-ratelimit-remaining is not a count: ignored for pacing", "value", jsondoc.OneLine(resp.Header.Get("X-Ratelimit-Remaining")))
		}
	}
	paced() // the reading just taken counts the request, if it has one
	c.stats.record(endpoint, a.status, len(body))
	c.log.DebugContext(ctx, "http request", "method", http.MethodGet, "path", pathOf(reqURL),
		"endpoint", endpoint, "status", a.status, "duration_ms", c.clock.Now().Sub(began).Milliseconds(),
		"bytes", len(body), "attempt", try+1)
	if err != nil {
		a.err = err
		a.verdict = verdictRetry
		var tooLarge errBodyTooLarge
		var redirect *RedirectError
		var budget errBodyBudget
		if ctx.Err() != nil || errors.As(err, &tooLarge) || errors.As(err, &redirect) || errors.As(err, &budget) && budget.never {
			a.verdict = verdictDone
		}
		return a
	}
	c.classify(&a, reqURL, body, decode)
	return a
}

// classify sets the verdict of an attempt that got a whole response.
func (c *Client) classify(a *attempt, reqURL string, body []byte, decode docDecoder) {
	switch {
	case a.status >= 200 && a.status < 300:
		doc, err := decode(body)
		if err != nil {
			a.verdict, a.err = verdictRetry, fmt.Errorf("%s %s: %w", http.MethodGet, requestURI(sanitizeURL(reqURL)), err)
			return
		}
		a.verdict, a.doc, a.body = verdictDone, doc, body
	case a.status == http.StatusUnauthorized:
		a.verdict, a.err = verdictReauth, responseError(reqURL, a.status, body)
	case a.status == http.StatusTooManyRequests:
		a.verdict, a.err = verdictRateLimited, responseError(reqURL, a.status, body)
	case a.status >= 500:
		a.verdict, a.err = verdictRetry, responseError(reqURL, a.status, body)
	default:
		a.verdict, a.err = verdictDone, responseError(reqURL, a.status, body)
	}
}

// responseError builds the typed error of a response, with the API's error
// objects when the body holds them.
func responseError(reqURL string, status int, body []byte) *ResponseError {
	e := &ResponseError{Method: http.MethodGet, URL: sanitizeURL(reqURL), StatusCode: status}
	if doc, err := jsondoc.Decode(body); err == nil {
		e.Errors = doc.Errors
	}
	return e
}

// waitRateLimit sleeps as a 429 asks, or returns a *RateLimitError when the
// wait is too long or the request was refused too often.
func (c *Client) waitRateLimit(ctx context.Context, reqURL string, a attempt, waits int) error {
	wait, ok := rateLimitWait(a.header, c.clock.Now())
	if !ok {
		wait = c.backoffDelay(waits)
	}
	if wait > c.opts.MaxRateLimitWait || waits > c.opts.MaxAttempts {
		rl := c.rate.snapshot()
		return &RateLimitError{Method: http.MethodGet, URL: sanitizeURL(reqURL), RetryAfter: wait,
			Limit: rl.Limit, Remaining: rl.Remaining}
	}
	c.log.InfoContext(ctx, "rate limited, waiting", "path", pathOf(reqURL), "wait_ms", wait.Milliseconds())
	if err := c.clock.Sleep(ctx, wait); err != nil {
		return fmt.Errorf("waiting for rate limit: %w", err)
	}
	return nil
}

// backoff sleeps before retrying a failed attempt, or returns the attempt's
// error once the attempts or the retry time are used up: an
// *UnreachableError when no attempt got an answer. On 502 and 504 it
// returns the URL with page[size] halved, as big pages time out upstream.
// Retries log at DEBUG: the error that ends them says what was tried.
func (c *Client) backoff(ctx context.Context, reqURL string, a attempt, failures int, start time.Time, answered bool) (string, error) {
	delay := c.backoffDelay(failures)
	elapsed := c.clock.Now().Sub(start)
	if failures >= c.opts.MaxAttempts || elapsed+delay > c.opts.MaxRetryTime {
		if !answered {
			return reqURL, unreachable("the API", http.MethodGet, reqURL, c.opts.BaseURLSetting, failures, elapsed, a.err)
		}
		if failures >= c.opts.MaxAttempts {
			return reqURL, fmt.Errorf("giving up after %d attempts: %w", failures, a.err)
		}
		return reqURL, fmt.Errorf("giving up after %d attempts in %s: %w", failures, elapsed.Round(time.Millisecond), a.err)
	}
	if a.status == http.StatusBadGateway || a.status == http.StatusGatewayTimeout {
		reqURL = halvePageSize(reqURL, c.opts.PageSizeFloor)
	}
	c.log.DebugContext(ctx, "retrying request", "path", pathOf(reqURL), "status", a.status,
		"attempt", failures+1, "delay_ms", delay.Milliseconds(), "reason", a.err.Error())
	if err := c.clock.Sleep(ctx, delay); err != nil {
		return reqURL, fmt.Errorf("waiting to retry: %w", err)
	}
	return reqURL, nil
}

// backoffDelay is the jittered exponential delay before retry n (from 1):
// BackoffBase doubled n-1 times, capped at BackoffMax, then drawn uniformly
// from its upper half.
func (c *Client) backoffDelay(n int) time.Duration {
	d := c.opts.BackoffBase
	for i := 1; i < n && d < c.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.opts.BackoffMax)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(d-half+1)
}

// halvePageSize returns reqURL with the value of its page[size] parameter
// halved, down to floor. Every other byte of the URL is kept, so a next link
// is otherwise followed verbatim. A URL without page[size] is returned as is.
func halvePageSize(reqURL string, floor int) string {
	base, rawQuery, ok := strings.Cut(reqURL, "?")
	if !ok {
		return reqURL
	}
	fragment := ""
	if i := strings.IndexByte(rawQuery, '#'); i >= 0 {
		rawQuery, fragment = rawQuery[:i], rawQuery[i:]
	}
	parts := strings.Split(rawQuery, "&")
	for i, part := range parts {
		key, value, _ := strings.Cut(part, "=")
		if k, err := url.QueryUnescape(key); err != nil || k != "page[size]" {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return reqURL
		}
		half := max(n/2, floor)
		if half >= n {
			return reqURL
		}
		parts[i] = key + "=" + strconv.Itoa(half)
		return base + "?" + strings.Join(parts, "&") + fragment
	}
	return reqURL
}

// pathOf returns the path of a URL, for logs (never the query).
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

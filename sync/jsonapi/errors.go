package jsonapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

// ResponseError reports a response with a status the client does not retry
// (most 4xx), or the last of the failed attempts when retries ran out.
type ResponseError struct {
	// Method is the HTTP method.
	Method string
	// URL is the request URL, sanitized (no userinfo, secret-looking query
	// parameters redacted).
	URL string
	// StatusCode is the HTTP status code.
	StatusCode int
	// Errors holds the API's error objects, when the body had them.
	Errors []jsondoc.ErrorObject
}

// Error implements error, on one line:
// "GET /api/v2/users/9: 404 Not Found: resourceNotFound: ...".
func (e *ResponseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(requestURI(e.URL))
	b.WriteString(": ")
	b.WriteString(statusLine(e.StatusCode))
	if len(e.Errors) > 0 {
		if s := e.Errors[0].String(); s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
		if n := len(e.Errors) - 1; n > 0 {
			fmt.Fprintf(&b, " (and %d more)", n)
		}
	}
	return b.String()
}

// RateLimitError reports that the API asked the client to wait longer than
// Options.MaxRateLimitWait. The caller should retry after RetryAfter (for a
// job: snooze).
type RateLimitError struct {
	// Method is the HTTP method of the request that was not sent or refused.
	Method string
	// URL is the sanitized request URL.
	URL string
	// RetryAfter is how long to wait before trying again.
	RetryAfter time.Duration
	// Limit and Remaining are the last rate-limit figures seen (-1 if
	// unknown); for a wait the budget asks (Reserved > 0), Limit is the one
	// its floor is kept from, DefaultRateLimit when the API sent none.
	Limit, Remaining int
	// Reserved is how many of Limit Options.Budget leaves to others; when
	// Remaining is down to it, the share the client may use is spent.
	Reserved int
	// Reset is when the window resets, zero if the API did not say (the
	// wait, RetryAfter, then runs to the latest the window can end).
	Reset time.Time
}

// Error implements error.
func (e *RateLimitError) Error() string {
	if e.Reserved > 0 && e.Remaining >= 0 {
		state := "running out (the last requests are spread until the reset)"
		if e.Remaining <= e.Reserved {
			state = "spent"
		}
		reset := "; the API sent no readable reset time (x-ratelimit-reset), so the window is taken to last an hour from the first request that saw it"
		if !e.Reset.IsZero() {
			reset = "; it resets at " + e.Reset.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("%s %s: the API budget usersync may use is %s: %d of %d requests left, %d of them kept for the token owner's other tools (USERSYNC_API_BUDGET); retry after %s%s",
			e.Method, requestURI(e.URL), state, e.Remaining, e.Limit, e.Reserved, e.RetryAfter.Round(time.Second), reset)
	}
	return fmt.Sprintf("%s %s: rate limited: retry after %s", e.Method, requestURI(e.URL), e.RetryAfter)
}

// AuthError reports a credential the server refused: a second 401 from the
// API after a token refresh, or a token endpoint that rejected the refresh
// token or the client credentials. It is not retried.
type AuthError struct {
	// StatusCode is the status the API or the token endpoint answered.
	StatusCode int
	// Code is the OAuth error code ("invalid_grant"), when known.
	Code string
	// Description is the OAuth error_description, with secrets redacted.
	Description string
	// Err is the underlying error (a *ResponseError for an API 401).
	Err error
}

// Error implements error.
func (e *AuthError) Error() string {
	if e.Err != nil && e.Code == "" && e.Description == "" {
		return "authentication failed: " + e.Err.Error()
	}
	msg := "authentication failed: " + statusLine(e.StatusCode)
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Description != "" {
		msg += ": " + jsondoc.OneLine(e.Description)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *AuthError) Unwrap() error { return e.Err }

// NextLinkError reports a next link (or a resume URL) the client refuses to
// follow.
type NextLinkError struct {
	// URL is the sanitized link.
	URL string
	// Reason says why it was refused.
	Reason string
}

// Error implements error.
func (e *NextLinkError) Error() string {
	return "refusing next link " + jsondoc.OneLine(e.URL) + ": " + e.Reason
}

// QueryError reports a Query the client will not send, such as a form the
// API has removed (spec §9.3); Reason then names the replacement.
type QueryError struct {
	// Param is the query parameter at fault, such as "sort" or "filter[role][name]".
	Param string
	// Reason says what is wrong and, for a deprecated form, what replaces it.
	Reason string
	// Deprecated is set for the forms of spec §9.3.
	Deprecated bool
}

// Error implements error.
func (e *QueryError) Error() string { return "invalid query parameter " + e.Param + ": " + e.Reason }

// TransportError reports a request that got no complete response: a
// connection error, a timeout or a truncated body.
type TransportError struct {
	// Method is the HTTP method.
	Method string
	// URL is the sanitized request URL.
	URL string
	// Err is the cause, without the URL that net/http would put in it.
	Err error
}

// Error implements error.
func (e *TransportError) Error() string {
	return e.Method + " " + requestURI(e.URL) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// UnreachableError reports a server that never answered: every attempt
// failed before a response came (connection refused, DNS, a proxy, TLS, a
// timeout). It names the host in clear, what was tried and what to check.
type UnreachableError struct {
	// What names the server: "the API" or "the token endpoint".
	What string
	// Host is the server's host, with its port when the URL has one.
	Host string
	// Method and Path are the request's, without its query.
	Method, Path string
	// Setting names what holds the server's URL, such as
	// USERSYNC_API_URL (Options.BaseURLSetting); "" says "its URL".
	Setting string
	// Attempts and Elapsed are what was tried.
	Attempts int
	Elapsed  time.Duration
	// Err is the last attempt's error (a *TransportError).
	Err error
}

// Error implements error, on one line.
func (e *UnreachableError) Error() string {
	cause := e.Err
	if te := (*TransportError)(nil); errors.As(e.Err, &te) {
		cause = te.Err // the request's URL is said already, and without its query
	}
	setting := e.Setting
	if setting == "" {
		setting = "its URL"
	}
	return fmt.Sprintf("%s at %s did not answer: %d attempts of %s %s over %s failed, the last with: %v; check %s and the network (DNS, proxy: HTTPS_PROXY, firewall)",
		e.What, e.Host, e.Attempts, e.Method, e.Path, e.Elapsed.Round(100*time.Millisecond), cause, setting)
}

// Unwrap returns the last attempt's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable builds the *UnreachableError of rawURL.
func unreachable(what, method, rawURL, setting string, attempts int, elapsed time.Duration, err error) *UnreachableError {
	e := &UnreachableError{What: what, Method: method, Setting: setting, Attempts: attempts, Elapsed: elapsed, Err: err}
	if u, perr := url.Parse(rawURL); perr == nil {
		e.Host, e.Path = u.Host, u.EscapedPath()
	}
	return e
}

// isURLError reports an error of the HTTP client's: no response came.
func isURLError(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

func statusLine(code int) string {
	if text := http.StatusText(code); text != "" {
		return strconv.Itoa(code) + " " + text
	}
	return strconv.Itoa(code)
}

// quoteShort quotes s, cut to 40 bytes, for messages that name a bad value.
func quoteShort(s string) string { return strconv.Quote(cut(s)) }

// cut shortens s to 40 bytes for messages, marking the cut with "...".
func cut(s string) string {
	const limit = 40
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

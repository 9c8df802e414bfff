package jsonapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"encoding/json"
)

// DecodeError reports a body that is not a valid JSON:API document.
type DecodeError struct {
	// Reason says what is wrong, without echoing the body.
	Reason string
	// Err is the underlying error (a JSON syntax or type error).
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	if e.Err == nil {
		return "decoding JSON:API document: " + e.Reason
	}
	return "decoding JSON:API document: " + e.Reason + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// ErrorObject is one element of a JSON:API "errors" array.
type ErrorObject struct {
	// ID is the error code, such as "resourceNotFound" or "validationError".
	ID string
	// Status is the HTTP status as a string, when the server sends it.
	Status string
	// Code is an application error code, when sent.
	Code string
	// Title is a short summary.
	Title string
	// Detail is the explanation, from "detail" or, as the real service also
	// spells it, "details".
	Detail string
	// Source points at the cause: a JSON pointer into the request body, or
	// the name of a query parameter.
	Source ErrorSource
	// Meta is the raw "meta" of the error, nil when absent.
	Meta json.RawMessage
}

// ErrorSource is the "source" member of an error object.
type ErrorSource struct {
	// Pointer is a JSON pointer to the offending request member.
	Pointer string `json:"pointer"`
	// Parameter is the offending query parameter.
	Parameter string `json:"parameter"`
}

// looseString accepts a JSON string or number (some servers send "status"
// as a number) so an odd error body never hides the error itself.
type looseString string

// UnmarshalJSON implements json.Unmarshaler.
func (s *looseString) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = looseString(v)
	case 'n':
		*s = ""
	default:
		*s = looseString(strings.TrimSpace(string(b)))
	}
	return nil
}

// UnmarshalJSON decodes an error object, accepting "detail" and "details".
func (e *ErrorObject) UnmarshalJSON(b []byte) error {
	var w struct {
		ID      looseString     `json:"id"`
		Status  looseString     `json:"status"`
		Code    looseString     `json:"code"`
		Title   looseString     `json:"title"`
		Detail  looseString     `json:"detail"`
		Details looseString     `json:"details"`
		Source  *ErrorSource    `json:"source"`
		Meta    json.RawMessage `json:"meta"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = ErrorObject{ID: string(w.ID), Status: string(w.Status), Code: string(w.Code),
		Title: string(w.Title), Detail: string(w.Detail), Meta: w.Meta}
	if e.Detail == "" {
		e.Detail = string(w.Details)
	}
	if w.Source != nil {
		e.Source = *w.Source
	}
	return nil
}

// String returns "id: detail" (or the title when there is no detail) on one line.
func (e ErrorObject) String() string {
	text := e.Detail
	if text == "" {
		text = e.Title
	}
	code := e.ID
	if code == "" {
		code = e.Code
	}
	switch {
	case code == "":
		return oneLine(text)
	case text == "":
		return oneLine(code)
	}
	return oneLine(code + ": " + text)
}

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
	Errors []ErrorObject
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
		msg += ": " + oneLine(e.Description)
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
	return "refusing next link " + e.URL + ": " + e.Reason
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

func statusLine(code int) string {
	if text := http.StatusText(code); text != "" {
		return strconv.Itoa(code) + " " + text
	}
	return strconv.Itoa(code)
}

// oneLine replaces line breaks so an error message stays on one line.
// oneLine makes text a response sent fit a one-line message, stored and
// printed: control characters (line breaks, terminal escapes, NUL) and
// bidirectional overrides become spaces, runs of spaces one, bytes that are
// not UTF-8 U+FFFD, and it is cut to maxUntrusted bytes, marked "…".
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s { // an invalid byte comes as utf8.RuneError, U+FFFD
		if unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
			space = b.Len() > 0
			continue
		}
		if b.Len()+1+utf8.RuneLen(r) > maxUntrusted {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxUntrusted bounds each piece of response text in a message.
const maxUntrusted = 2 << 10

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

package jsondoc

import (
	"strconv"
	"strings"
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
		return OneLine(text)
	case text == "":
		return OneLine(code)
	}
	return OneLine(code + ": " + text)
}

// OneLine makes text a response sent fit a one-line message, stored and
// printed: control characters (line breaks, terminal escapes, NUL) and
// bidirectional overrides become spaces, runs of spaces one, bytes that are
// not UTF-8 U+FFFD, and it is cut to MaxOneLine bytes, marked "…".
func OneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s { // an invalid byte comes as utf8.RuneError, U+FFFD
		if unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
			space = b.Len() > 0
			continue
		}
		if b.Len()+1+utf8.RuneLen(r) > MaxOneLine {
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

// MaxOneLine bounds what OneLine returns, in bytes, before its mark "…".
const MaxOneLine = 2 << 10

// quoteShort quotes s, cut to 40 bytes, for messages that name a bad value.
func quoteShort(s string) string {
	const limit = 40
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strconv.Quote(s)
}

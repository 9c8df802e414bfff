package jsonapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/usersync/usersync/sync/jsondoc"
)

// checkMessage fails t unless msg is one printable line of valid UTF-8,
// bounded, without any of the secrets.
func checkMessage(t *testing.T, what, msg string, secrets ...string) {
	t.Helper()
	if !utf8.ValidString(msg) || strings.ContainsFunc(msg, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
	}) || len(msg) > 3*jsondoc.MaxOneLine {
		t.Errorf("%s: message of %d bytes %.300q", what, len(msg), msg)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("%s: message holds the secret %q", what, s)
		}
	}
}

// TestHostileErrorBodies: an error body whose detail holds NUL, terminal
// escapes, line breaks, bidirectional overrides, bytes that are not UTF-8
// or 5 MB gives a one-line, clean and bounded error.
func TestHostileErrorBodies(t *testing.T) {
	t.Parallel()
	for name, detail := range map[string]string{
		"NUL":        `a\u0000b`,
		"escapes":    `\u001b[2J\u001b[31mred\u001b[0m`,
		"lines":      `one\r\ntwo\nthree`,
		"bidi":       `abc\u202Egnp.exe`,
		"not UTF-8":  "a\xff\xfeb",
		"C1":         `a\u0085\u009bb`,
		"5 MB":       strings.Repeat("é", 5<<20/2),
		"long lines": strings.Repeat(`x\n`, 100_000),
	} {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
			writeDoc(w, http.StatusBadRequest, `{"errors":[{"id":"bad\u001b[1m","title":"t","detail":"`+detail+`"}]}`)
		})
		c := newClient(t, srv.URL, newFakeClock(t), nil)
		_, err := c.Collection("users", Query{}).Next(context.Background())
		var re *ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a *ResponseError", name, err)
		}
		checkMessage(t, name, err.Error())
	}
	if got := jsondoc.OneLine("a\x00b\x1b[31mc\r\n\td\u202ee\xff"); got != "a b [31mc d e\uFFFD" {
		t.Errorf("oneLine: %q", got)
	}
}

// FuzzDecodeErrorBody: any error body gives a clean one-line error.
func FuzzDecodeErrorBody(f *testing.F) {
	for _, seed := range []string{`{"errors":[{"id":"x","detail":"a\u0000b"}]}`, `{"errors":[{"title":"\u001b[2J"}]}`,
		`{"errors":[{"code":1,"details":"a\nb"}]}`, "{\"errors\":[{\"detail\":\"\xff\"}]}", `[]`, `{"errors":{}}`, ``} {
		f.Add(400, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		checkMessage(t, "error body", responseError("https://api.example.com/api/v2/users?access_token=SECRET", status, body).Error(), "SECRET")
	})
}

// FuzzDecodeTokenResponse: any token endpoint answer gives a token or a
// clean one-line error that never holds the client secret or the refresh
// token, even when the endpoint echoes them.
func FuzzDecodeTokenResponse(f *testing.F) {
	for _, seed := range []string{`{"access_token":"a","expires_in":7200,"refresh_token":"r"}`, `{"access_token":"a","expires_in":"99999999999999999999"}`,
		`{"error":"invalid_grant","error_description":"` + secretRefresh + ` is revoked\u0000"}`, `{"error":"` + secretClient + `"}`,
		`{"access_token":"","expires_in":-1}`, `not json`, ``} {
		for _, status := range []int{200, 400, 401, 429, 503} {
			f.Add(status, []byte(seed))
		}
	}
	var mu sync.Mutex
	var answer struct {
		status int
		body   []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "9223372036854775807")
		w.WriteHeader(answer.status)
		_, _ = w.Write(answer.body)
	}))
	f.Cleanup(srv.Close)
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 200 || status > 599 {
			status = 200 + (status%400+400)%400
		}
		mu.Lock()
		answer.status, answer.body = status, body
		mu.Unlock()
		o, err := NewOAuth(OAuthConfig{TokenURL: srv.URL + "/oauth/token", ClientID: "c", ClientSecret: secretClient,
			RefreshToken: secretRefresh, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := o.Token(context.Background())
		if err == nil && tok == "" {
			t.Error("no error and no token")
		}
		if err != nil {
			checkMessage(t, "token response", err.Error(), secretRefresh, secretClient)
		}
	})
}

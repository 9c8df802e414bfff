package jsonapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

// assertNoSecrets fails if s holds any of the test secrets.
func assertNoSecrets(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{secretAccess, secretRefresh, secretClient, secretRotated, secretInBase, "Bearer "} {
		if strings.Contains(s, secret) {
			t.Errorf("secret %q leaked in: %s", secret, s)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNoSecretInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	secretQuery := "access_token=" + secretAccess + "&refresh_token=" + secretRefresh + "&client_secret=" + secretClient
	var srvURL string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("case") {
		case "404":
			writeDoc(w, http.StatusNotFound, `{"errors":[{"id":"resourceNotFound"}]}`)
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		case "429":
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusTooManyRequests)
		case "reset":
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
		case "badjson":
			writeDoc(w, http.StatusOK, `{"data":[{"id":"`+secretAccess+`","type":"user"}`)
		case "otherhost":
			writeDoc(w, http.StatusOK, pageBody(`{"next":"https://u:`+secretInBase+`@evil.example/x?`+secretQuery+`"}`, 1))
		default:
			writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
		}
	})
	srvURL = srv.URL
	c := newClient(t, srvURL, newFakeClock(t), func(o *Options) {
		o.Logger = logger
		o.MaxAttempts = 2
	})
	ts := newTokenServer(t) // refuses every refresh token, echoing it
	oc, _ := newOAuthClient(t, ts, newFakeClock(t), NewMemoryTokenStore(secretRotated), nil)

	var errs []error
	for _, kase := range []string{"404", "500", "429", "reset", "badjson"} {
		_, err := c.Resume(srvURL + "/api/v2/users?case=" + kase + "&" + secretQuery).Next(context.Background())
		errs = append(errs, err)
	}
	it := c.Resume(srvURL + "/api/v2/users?case=otherhost")
	_, _ = it.Next(context.Background())
	_, err := it.Next(context.Background())
	errs = append(errs, err)
	_, err = c.Resume("https://u:" + secretInBase + "@evil.example/x?" + secretQuery).Next(context.Background())
	errs = append(errs, err)
	errs = append(errs, get(context.Background(), oc))
	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		assertNoSecrets(t, err.Error())
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error: %q", err)
		}
	}
	if !strings.Contains(logs.String(), "level=DEBUG msg=\"http request\" method=GET path=/api/v2/users endpoint=users status=404") ||
		!strings.Contains(logs.String(), "duration_ms=") || !strings.Contains(logs.String(), "bytes=") {
		t.Errorf("request log lines missing or malformed:\n%s", logs.String())
	}
	assertNoSecrets(t, logs.String())
}

func TestErrorMessagesAreOneLine(t *testing.T) {
	t.Parallel()
	errs := []error{
		&ResponseError{Method: "GET", URL: "https://h/api/v2/users?count=false", StatusCode: 404,
			Errors: []jsondoc.ErrorObject{{ID: "resourceNotFound", Detail: "line one\nline two"}}},
		&RateLimitError{Method: "GET", URL: "https://h/api/v2/users", RetryAfter: 90 * time.Second},
		&AuthError{StatusCode: 400, Code: "invalid_grant", Description: "a\r\nb"},
	}
	want := []string{
		"GET /api/v2/users?count=false: 404 Not Found: resourceNotFound: line one line two",
		"GET /api/v2/users: rate limited: retry after 1m30s",
		"authentication failed: 400 Bad Request: invalid_grant: a b",
	}
	for i, err := range errs {
		if got := err.Error(); got != want[i] {
			t.Errorf("Error() = %q, want %q", got, want[i])
		}
	}
}

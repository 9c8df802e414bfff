package jsonapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// levelCounter counts the records of a logger by level and message.
type levelCounter struct {
	buf syncBuffer
}

func (l *levelCounter) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestUnreachableAPI: an API that never answers is one
// *UnreachableError naming the host in clear, the attempts and the setting
// to check, with the request's path but not its percent-encoded query; the
// retries log at DEBUG only.
func TestUnreachableAPI(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	var logs levelCounter
	c := newClient(t, "http://"+addr, newFakeClock(t), func(o *Options) {
		o.BaseURLSetting, o.Logger = "USERSYNC_API_URL", logs.logger()
	})
	_, err := c.Get(context.Background(), "users", Query{}.Fields("user", "name", "email").PageSize(100))
	var ue *UnreachableError
	var te *TransportError
	if !errors.As(err, &ue) || !errors.As(err, &te) || ue.Host != addr || ue.Attempts != 5 {
		t.Fatalf("error %v, want an *UnreachableError of %s after 5 attempts wrapping a *TransportError", err, addr)
	}
	msg := err.Error()
	for _, want := range []string{"the API at " + addr + " did not answer: 5 attempts of GET /api/v2/users over ", "connection refused",
		"; check USERSYNC_API_URL and the network (DNS, proxy: HTTPS_PROXY, firewall)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.ContainsAny(msg, "?%\n") {
		t.Errorf("error holds the query or a line break: %s", msg)
	}
	out := logs.buf.String()
	if n := strings.Count(out, `level=DEBUG msg="retrying request"`); n != 4 || strings.Contains(out, "level=INFO") || strings.Contains(out, "level=WARN") {
		t.Errorf("want 4 retries at DEBUG and nothing at INFO or above:\n%s", out)
	}
}

// TestUnreachableTokenEndpoint: the same for an OAuth token endpoint that
// never answers; one that answers (even 503) is not unreachable.
func TestUnreachableTokenEndpoint(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	var logs levelCounter
	o, err := NewOAuth(OAuthConfig{TokenURL: "http://" + addr + "/oauth/token", URLSetting: "USERSYNC_OAUTH_TOKEN_URL",
		ClientID: "c", ClientSecret: secretClient, RefreshToken: secretRefresh, Clock: newFakeClock(t), Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Token(context.Background())
	var ue *UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the token endpoint at "+addr+" did not answer: 5 attempts of POST /oauth/token over ") ||
		!strings.Contains(err.Error(), "check USERSYNC_OAUTH_TOKEN_URL") {
		t.Fatalf("error %v", err)
	}
	assertNoSecrets(t, err.Error())
	if out := logs.buf.String(); strings.Count(out, `level=DEBUG msg="retrying token request"`) != 4 || strings.Contains(out, "level=INFO") {
		t.Errorf("want 4 retries at DEBUG and nothing at INFO:\n%s", out)
	}

	ts := newTokenServer(t, secretRefresh)
	ts.fail = []int{503, 503, 503, 503, 503}
	c, _ := newOAuthClient(t, ts, newFakeClock(t), nil, nil)
	if err := get(context.Background(), c); errors.As(err, &ue) || !strings.Contains(err.Error(), "giving up after 5 attempts") {
		t.Errorf("a token endpoint answering 503: %v", err)
	}
}

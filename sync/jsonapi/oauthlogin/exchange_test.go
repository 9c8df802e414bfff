package oauthlogin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi"
)

// TestListenRedirectPortInUse: a redirect port another process holds is
// named, with the flag that picks another.
func TestListenRedirectPortInUse(t *testing.T) {
	t.Parallel()
	ln, port, err := ListenRedirect(context.Background(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, _, err := ListenRedirect(context.Background(), port, false); err == nil || !strings.Contains(err.Error(), "--redirect-port") {
		t.Errorf("a port in use: %v", err)
	}
	if ln, p, err := ListenRedirect(context.Background(), port, true); ln != nil || p != port || err != nil {
		t.Errorf("no browser listens on nothing: %v %d %v", ln, p, err)
	}
}

// TestExplainExchange: the token endpoint's refusals say what to do; any
// other error is left as it is.
func TestExplainExchange(t *testing.T) {
	t.Parallel()
	grant := fmt.Errorf("exchanging: %w", &jsonapi.AuthError{StatusCode: 400, Code: "invalid_grant"})
	if err := ExplainExchange(grant, "usersync auth login"); !strings.Contains(err.Error(), "run usersync auth login again") {
		t.Errorf("invalid_grant: %v", err)
	}
	client := &jsonapi.AuthError{StatusCode: 401, Code: "invalid_client"}
	if err := ExplainExchange(client, "x"); !strings.Contains(err.Error(), "USERSYNC_OAUTH_CLIENT_SECRET") {
		t.Errorf("invalid_client: %v", err)
	}
	other := errors.New("connection refused")
	if err := ExplainExchange(other, "x"); !errors.Is(err, other) || err.Error() != other.Error() {
		t.Errorf("another error: %v", err)
	}
}

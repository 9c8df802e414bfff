package oauthlogin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/usersync/usersync/sync/jsonapi"
)

// ListenRedirect listens on the loopback redirect port (none with
// noBrowser: the operator pastes the redirect) and returns the port.
func ListenRedirect(ctx context.Context, port int, noBrowser bool) (net.Listener, int, error) {
	if noBrowser {
		return nil, port, nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, 0, fmt.Errorf("listening for the redirect on 127.0.0.1:%d: the port is in use; stop what holds it or pick another with --redirect-port (and register that redirect URI)", port)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("listening for the redirect: %w", err)
	}
	return ln, ln.Addr().(*net.TCPAddr).Port, nil
}

// ExplainExchange turns the token endpoint's refusals into one line that
// says what to do; login is the command that was run.
func ExplainExchange(err error, login string) error {
	var ae *jsonapi.AuthError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case "invalid_grant":
		return fmt.Errorf("exchanging the code: the token endpoint refused it (invalid_grant): it was already used, expired, or was issued for another redirect URI or PKCE verifier; run %s again", login)
	case "invalid_client", "unauthorized_client":
		return fmt.Errorf("exchanging the code: the token endpoint refused the client (%s): check USERSYNC_OAUTH_CLIENT_ID and USERSYNC_OAUTH_CLIENT_SECRET", ae.Code)
	}
	return err
}

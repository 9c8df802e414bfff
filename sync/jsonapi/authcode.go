package jsonapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/usersync/usersync/sync/jsondoc"
)

// AuthorizationRequest is one run of the OAuth 2 authorization-code flow
// (RFC 6749 §4.1) with PKCE (RFC 7636, S256): the URL to send the user to,
// and the state and code verifier that belong to it. State and Verifier are
// secrets of this run: never print or log them.
type AuthorizationRequest struct {
	// URL is the authorize URL with response_type=code, client_id,
	// redirect_uri, scope (when given), state and the code challenge.
	URL string
	// RedirectURI is where the authorization server sends the user back.
	RedirectURI string
	// State is 32 random bytes, base64url: the callback must return it.
	State string
	// Verifier is the PKCE code_verifier, 32 random bytes, base64url.
	Verifier string
}

// ErrStateMismatch is the callback's state differing from the request's:
// the redirect did not come from this request (a stale tab, or forgery).
var ErrStateMismatch = errors.New("the callback's state does not match this login's (a stale browser tab, or a forged redirect)")

// AuthorizeError is an error the authorization server sent back to the
// redirect URI (RFC 6749 §4.1.2.1), such as access_denied.
type AuthorizeError struct {
	// Code is the error code ("access_denied").
	Code string
	// Description is error_description, cleaned to one line.
	Description string
}

// Error implements error.
func (e *AuthorizeError) Error() string {
	msg := "the authorization server refused: " + e.Code
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// NewAuthorizationRequest builds an authorization request for the client:
// a fresh state and PKCE verifier (32 random bytes each, from
// golang.org/x/oauth2's GenerateVerifier) and the authorize URL with the S256
// challenge. scope is space-separated; "" sends none.
func NewAuthorizationRequest(authorizeURL, clientID, redirectURI, scope string) (AuthorizationRequest, error) {
	u, err := url.Parse(authorizeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return AuthorizationRequest{}, errors.New("the authorize URL must be an absolute http or https URL")
	}
	state, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	cfg := oauth2.Config{ClientID: clientID, RedirectURL: redirectURI, Scopes: strings.Fields(scope),
		Endpoint: oauth2.Endpoint{AuthURL: authorizeURL}}
	return AuthorizationRequest{URL: cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)),
		RedirectURI: redirectURI, State: state, Verifier: verifier}, nil
}

// Callback checks the query the authorization server redirected with and
// returns the code. A state other than the request's (or none) is
// ErrStateMismatch, also when the query carries an error parameter: any web
// page can send the loopback listener a callback, so one without this
// login's state proves nothing, a refusal included (the error then wraps
// the *AuthorizeError too). An error parameter with the right state is an
// *AuthorizeError.
func (r AuthorizationRequest) Callback(q url.Values) (string, error) {
	stateOK := subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(r.State)) == 1
	if code := q.Get("error"); code != "" {
		ae := &AuthorizeError{Code: jsondoc.OneLine(code), Description: jsondoc.OneLine(q.Get("error_description"))}
		if !stateOK {
			return "", fmt.Errorf("%w; it says %w", ErrStateMismatch, ae)
		}
		return "", ae
	}
	if !stateOK {
		return "", ErrStateMismatch
	}
	code := q.Get("code")
	if code == "" {
		return "", errors.New("the callback carries no code")
	}
	return code, nil
}

// Grant is what an authorization-code exchange obtained, without the
// tokens themselves (the Store has those).
type Grant struct {
	// ExpiresAt is when the access token expires; zero when the token
	// endpoint did not say.
	ExpiresAt time.Time
	// Scope is the scope granted, as the token endpoint sent it.
	Scope string
}

// ExchangeCode exchanges an authorization code (RFC 6749 §4.1.3, with the
// PKCE code_verifier when verifier is not empty) for tokens, makes the
// access token current and saves the refresh token to the Store (with the
// access token and expiry when it is a GrantStore). A refusal is an
// *AuthError (invalid_grant for a code already used, expired, or issued for
// another redirect URI or verifier); 429 and 5xx are retried as refreshes
// are. A response without a refresh token is an error: the worker could not
// go on without one.
func (o *OAuth) ExchangeCode(ctx context.Context, code, redirectURI, verifier string) (Grant, error) {
	var opts []oauth2.AuthCodeOption
	if verifier != "" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	started := o.cfg.Clock.Now()
	tr, err := o.retrieve(ctx, "authorization_code", func(ctx context.Context) (*oauth2.Token, error) {
		return o.config(redirectURI).Exchange(ctx, code, opts...)
	}, code, verifier)
	if err != nil {
		return Grant{}, fmt.Errorf("exchanging the authorization code: %w", err)
	}
	if tr.refresh == "" {
		return Grant{}, errors.New("exchanging the authorization code: the token endpoint issued no refresh token (does the application ask for offline access?)")
	}
	o.mu.Lock()
	o.loaded = true
	o.mu.Unlock()
	o.publish(tr, started)
	if err := o.save(ctx, tr.refresh); err != nil {
		return Grant{}, err
	}
	o.mu.Lock()
	g := Grant{ExpiresAt: o.expiresAt, Scope: o.scope}
	o.mu.Unlock()
	o.cfg.Logger.DebugContext(ctx, "oauth authorization code exchanged", "expires_in_s", tr.expiresIn)
	return g, nil
}

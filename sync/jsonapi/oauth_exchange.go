package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/usersync/usersync/sync/jsondoc"
)

// The token endpoint's protocol (the grants, PKCE, reading the response
// and its errors) is golang.org/x/oauth2's. What is usersync's own is here:
// the HTTP client it uses (the redirect refusal, the timeouts, the
// User-Agent), the retry policy, and the library's errors turned into this
// package's typed ones, without secrets.

// token is what OAuth uses of a token response.
type token struct {
	access, refresh, scope string
	expiresIn              int64 // seconds; 0 when the endpoint did not say
}

func tokenOf(t *oauth2.Token) token {
	scope, _ := t.Extra("scope").(string)
	return token{access: t.AccessToken, refresh: t.RefreshToken, expiresIn: t.ExpiresIn,
		scope: jsondoc.OneLine(strings.Join(strings.Fields(scope), " "))}
}

// config is the library's view of the client; redirectURI is sent with an
// authorization code only.
func (o *OAuth) config(redirectURI string) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{TokenURL: o.cfg.TokenURL, AuthStyle: oauth2.AuthStyleInParams}}
}

// exchange runs the refresh-token grant with the retry policy. A library
// token source made for the one call: OAuth, not the library, decides when
// to refresh (it shares the rotated token through the Store).
func (o *OAuth) exchange(ctx context.Context, refresh string) (token, error) {
	return o.retrieve(ctx, "refresh_token", func(ctx context.Context) (*oauth2.Token, error) {
		return o.config("").TokenSource(ctx, &oauth2.Token{RefreshToken: refresh}).Token()
	}, refresh)
}

// retrieve runs call, a grant at the token endpoint, retrying 429, 5xx,
// network errors and unreadable answers with backoff. A refusal (other 4xx)
// is an *AuthError and is not retried; an endpoint that never answered is an
// *UnreachableError. secrets are redacted from the endpoint's error texts
// besides the client's own.
func (o *OAuth) retrieve(ctx context.Context, grantType string, call func(context.Context) (*oauth2.Token, error), secrets ...string) (token, error) {
	start := o.cfg.Clock.Now()
	answered := false
	for attempt := 1; ; attempt++ {
		t, retryAfter, err := o.attempt(ctx, call, secrets)
		if err == nil {
			return tokenOf(t), nil
		}
		var rt retryableTokenError
		if !errors.As(err, &rt) || ctx.Err() != nil {
			return token{}, err
		}
		answered = answered || rt.answered
		if attempt >= o.cfg.MaxAttempts {
			if !answered {
				return token{}, unreachable("the token endpoint", http.MethodPost, o.cfg.TokenURL, o.cfg.URLSetting,
					attempt, o.cfg.Clock.Now().Sub(start), rt.err)
			}
			return token{}, fmt.Errorf("giving up after %d attempts: %w", attempt, rt.err)
		}
		delay := o.delay(attempt)
		if retryAfter > 0 {
			delay = min(retryAfter, o.cfg.BackoffMax)
		}
		o.cfg.Logger.DebugContext(ctx, "retrying token request", "grant_type", grantType, "attempt", attempt+1,
			"delay_ms", delay.Milliseconds(), "reason", err.Error())
		if err := o.cfg.Clock.Sleep(ctx, delay); err != nil {
			return token{}, fmt.Errorf("waiting to retry: %w", err)
		}
	}
}

// attempt runs call once through this OAuth's HTTP client, bounded by
// RequestTimeout, and returns the Retry-After of a 429 or 503, if any.
func (o *OAuth) attempt(ctx context.Context, call func(context.Context) (*oauth2.Token, error), secrets []string) (*oauth2.Token, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout)
	defer cancel()
	t, err := call(context.WithValue(ctx, oauth2.HTTPClient, o.client))
	if err == nil {
		return t, 0, nil
	}
	wait, err := o.tokenError(err, secrets)
	return nil, wait, err
}

// tokenError turns the library's error into a typed one: never its text,
// which may hold the response body and with it a secret echoed back.
func (o *OAuth) tokenError(err error, secrets []string) (time.Duration, error) {
	tokenURL := sanitizeURL(o.cfg.TokenURL)
	var re *oauth2.RetrieveError
	var redirect *RedirectError
	switch {
	case errors.As(err, &re) && re.Response != nil && (re.Response.StatusCode == http.StatusTooManyRequests || re.Response.StatusCode >= 500):
		wait, _ := parseRetryAfter(re.Response.Header.Get("Retry-After"), o.cfg.Clock.Now())
		return wait, retryableTokenError{err: &ResponseError{Method: http.MethodPost, URL: tokenURL, StatusCode: re.Response.StatusCode}, answered: true}
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		return 0, &AuthError{StatusCode: status, Code: o.redact(re.ErrorCode, secrets...), Description: o.redact(re.ErrorDescription, secrets...)}
	case errors.As(err, &redirect):
		return 0, &TransportError{Method: http.MethodPost, URL: tokenURL, Err: stripURLError(err)}
	case isURLError(err):
		return 0, retryableTokenError{err: &TransportError{Method: http.MethodPost, URL: tokenURL, Err: stripURLError(err)}}
	}
	// An answer the library could not read (its body, its JSON, no
	// access_token): its words name no secret, but are cleaned anyway.
	return 0, retryableTokenError{answered: true, err: &TransportError{Method: http.MethodPost, URL: tokenURL,
		Err: errors.New("reading the token response: " + o.redact(strings.TrimPrefix(err.Error(), "oauth2: "), secrets...))}}
}

func (o *OAuth) delay(attempt int) time.Duration {
	d := o.cfg.BackoffBase
	for i := 1; i < attempt && d < o.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, o.cfg.BackoffMax)
}

// retryableTokenError marks a token endpoint failure worth retrying;
// answered says the endpoint answered (a status, a body), so it is reachable.
type retryableTokenError struct {
	err      error
	answered bool
}

func (e retryableTokenError) Error() string { return e.err.Error() }
func (e retryableTokenError) Unwrap() error { return e.err }

// redact removes the secrets of this OAuth, and those given, from s, in
// case the endpoint echoes them in an error description.
func (o *OAuth) redact(s string, secrets ...string) string {
	for _, secret := range slices.Concat(secrets, []string{o.cfg.RefreshToken, o.cfg.ClientSecret}) {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "REDACTED")
		}
	}
	return jsondoc.OneLine(s)
}

// headers sets the User-Agent and Accept of the token requests, which the
// library leaves to the HTTP client.
type headers struct {
	base      http.RoundTripper
	userAgent string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", h.userAgent)
	r.Header.Set("Accept", "application/json")
	return h.base.RoundTrip(r)
}

// tokenClient is c with the headers set and redirects kept to the token
// endpoint's origin.
func tokenClient(c *http.Client, userAgent string) *http.Client {
	cp := *sameOriginRedirects(c)
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = headers{base: base, userAgent: userAgent}
	return &cp
}

package jsonapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"encoding/json"

	"github.com/usersync/usersync/sync/jsondoc"
)

// The token endpoint's protocol: posting a grant, retrying what is worth
// retrying, and turning the response into a token or a typed error.

// tokenResponse is the JSON body of a successful token response.
type tokenResponse struct {
	AccessToken  string  `json:"access_token"`
	TokenType    string  `json:"token_type"`
	ExpiresIn    flexInt `json:"expires_in"`
	RefreshToken string  `json:"refresh_token"`
	Scope        string  `json:"scope"`
	CreatedAt    flexInt `json:"created_at"`
}

// tokenErrorResponse is the JSON body of a refused token request (RFC 6749 §5.2).
type tokenErrorResponse struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// flexInt is an integer sent as a number or a string.
type flexInt int64

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexInt) UnmarshalJSON(b []byte) error {
	var id jsondoc.ID
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	if err := id.UnmarshalJSON(b); err != nil {
		return err
	}
	*f = flexInt(id)
	return nil
}

// exchange posts the refresh-token grant, retrying 429, 5xx, network errors
// and unreadable bodies with backoff. A refusal (400, 401 and other 4xx) is
// an *AuthError and is not retried.
func (o *OAuth) exchange(ctx context.Context, refresh string) (tokenResponse, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {refresh},
	}
	if o.cfg.RedirectURI != "" {
		form.Set("redirect_uri", o.cfg.RedirectURI)
	}
	return o.exchangeForm(ctx, form, refresh)
}

// exchangeForm posts a grant to the token endpoint with the client's
// credentials, retrying as exchange says. secrets are redacted from the
// endpoint's error texts besides the client's own.
func (o *OAuth) exchangeForm(ctx context.Context, form url.Values, secrets ...string) (tokenResponse, error) {
	for attempt := 1; ; attempt++ {
		tr, retryAfter, err := o.post(ctx, form, secrets)
		if err == nil || !isRetryableTokenError(err) || ctx.Err() != nil {
			return tr, err
		}
		if attempt >= o.cfg.MaxAttempts {
			return tr, fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		delay := o.delay(attempt)
		if retryAfter > 0 {
			delay = min(retryAfter, o.cfg.BackoffMax)
		}
		o.cfg.Logger.InfoContext(ctx, "retrying token request", "grant_type", form.Get("grant_type"), "attempt", attempt+1,
			"delay_ms", delay.Milliseconds(), "reason", err.Error())
		if err := o.cfg.Clock.Sleep(ctx, delay); err != nil {
			return tr, fmt.Errorf("waiting to retry: %w", err)
		}
	}
}

func (o *OAuth) delay(attempt int) time.Duration {
	d := o.cfg.BackoffBase
	for i := 1; i < attempt && d < o.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, o.cfg.BackoffMax)
}

// retryableTokenError marks a token endpoint failure worth retrying.
type retryableTokenError struct{ err error }

func (e retryableTokenError) Error() string { return e.err.Error() }
func (e retryableTokenError) Unwrap() error { return e.err }

func isRetryableTokenError(err error) bool {
	var r retryableTokenError
	return errors.As(err, &r)
}

// post sends one grant, form completed with the client's credentials. It
// returns the Retry-After of a 429 or 503, if any.
func (o *OAuth) post(ctx context.Context, grant url.Values, secrets []string) (tokenResponse, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.RequestTimeout)
	defer cancel()
	form := url.Values{"client_id": {o.cfg.ClientID}, "client_secret": {o.cfg.ClientSecret}}
	for k, v := range grant {
		form[k] = v
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return tokenResponse{}, 0, errors.New("building token request: invalid token URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", o.cfg.UserAgent)
	resp, err := o.cfg.HTTPClient.Do(req)
	if err != nil {
		te := &TransportError{Method: http.MethodPost, URL: sanitizeURL(o.cfg.TokenURL), Err: stripURLError(err)}
		if redirect := (*RedirectError)(nil); errors.As(err, &redirect) {
			return tokenResponse{}, 0, te
		}
		return tokenResponse{}, 0, retryableTokenError{te}
	}
	defer resp.Body.Close()
	body, err := readBody(ctx, resp, 1<<20, func(size int) []byte { return make([]byte, 0, size) }, nil)
	if err != nil {
		return tokenResponse{}, 0, retryableTokenError{&TransportError{Method: http.MethodPost,
			URL: sanitizeURL(o.cfg.TokenURL), Err: fmt.Errorf("reading body: %w", err)}}
	}
	return o.parseTokenResponse(resp, body, secrets...)
}

// parseTokenResponse turns a token endpoint response into a token or a
// typed error.
func (o *OAuth) parseTokenResponse(resp *http.Response, body []byte, secrets ...string) (tokenResponse, time.Duration, error) {
	status := resp.StatusCode
	switch {
	case status == http.StatusOK:
		var tr tokenResponse
		if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
			return tokenResponse{}, 0, retryableTokenError{&ResponseError{Method: http.MethodPost,
				URL: sanitizeURL(o.cfg.TokenURL), StatusCode: status}}
		}
		return tr, 0, nil
	case status == http.StatusTooManyRequests || status >= 500:
		wait, _ := parseRetryAfter(resp.Header.Get("Retry-After"), o.cfg.Clock.Now())
		return tokenResponse{}, wait, retryableTokenError{&ResponseError{Method: http.MethodPost,
			URL: sanitizeURL(o.cfg.TokenURL), StatusCode: status}}
	}
	var te tokenErrorResponse
	_ = json.Unmarshal(body, &te) // a refusal without a JSON body is still a refusal
	return tokenResponse{}, 0, &AuthError{StatusCode: status, Code: o.redact(te.Error, secrets...),
		Description: o.redact(te.Description, secrets...)}
}

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

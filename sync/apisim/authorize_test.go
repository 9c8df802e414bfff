package apisim

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"
	"time"
)

const testRedirect = "http://127.0.0.1:8085/callback"

// authorize sends GET /oauth/authorize without following the redirect and
// returns the status and the redirect's query (nil when there is none).
func (e *env) authorize(params url.Values) (int, url.Values) {
	e.t.Helper()
	client := e.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Get(e.srv.URL + "/oauth/authorize?" + params.Encode())
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return resp.StatusCode, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		e.t.Fatalf("Location %q: %v", loc, err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != testRedirect {
		e.t.Errorf("redirected to %s, want %s", got, testRedirect)
	}
	return resp.StatusCode, u.Query()
}

func authorizeParams(state, challenge string) url.Values {
	v := url.Values{"response_type": {"code"}, "client_id": {"cid"}, "redirect_uri": {testRedirect},
		"state": {state}, "scope": {"users.read"}}
	if challenge != "" {
		v.Set("code_challenge", challenge)
		v.Set("code_challenge_method", "S256")
	}
	return v
}

func codeForm(code, verifier string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {testRedirect},
		"code_verifier": {verifier}, "client_id": {"cid"}, "client_secret": {"csecret"}}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestAuthorizationCodeFlow: with only a client id configured, the authorize
// endpoint redirects with a code and the state; the code, exchanged once
// with its redirect URI and PKCE verifier, yields tokens whose refresh token
// the refresh grant then accepts.
func TestAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, ClientID: "cid", ClientSecret: "csecret", TokenTTL: time.Hour})
	e.getDoc("/api/v2/users", http.StatusUnauthorized) // OAuth is on: any token no longer does

	const verifier = "a-verifier-of-at-least-forty-three-characters-long"
	status, q := e.authorize(authorizeParams("st-1", s256(verifier)))
	if status != http.StatusFound || q.Get("code") == "" || q.Get("state") != "st-1" || q.Get("error") != "" {
		t.Fatalf("authorize: %d %v", status, q)
	}
	code := q.Get("code")
	if e.sim.PendingCodes() != 1 {
		t.Errorf("PendingCodes() = %d, want 1", e.sim.PendingCodes())
	}
	status, tr, _ := e.postToken(codeForm(code, verifier))
	if status != http.StatusOK || tr.AccessToken == "" || tr.RefreshToken == "" || tr.ExpiresIn != 3600 {
		t.Fatalf("code grant: %d %+v", status, tr)
	}
	e.token = tr.AccessToken
	e.getDoc("/api/v2/users", http.StatusOK)

	// Single use: the same code again is refused.
	if status, tr2, _ := e.postToken(codeForm(code, verifier)); status != http.StatusBadRequest || tr2.Error != "invalid_grant" {
		t.Errorf("reused code: %d %+v", status, tr2)
	}
	// The refresh token issued is the one the refresh grant accepts.
	if status, tr3, _ := e.postToken(refreshForm(tr.RefreshToken)); status != http.StatusOK || tr3.RefreshToken == tr.RefreshToken {
		t.Errorf("refresh after the code grant: %d %+v", status, tr3)
	}
	if e.sim.PendingCodes() != 0 || e.sim.TokenGrants() != 2 {
		t.Errorf("PendingCodes() = %d, TokenGrants() = %d", e.sim.PendingCodes(), e.sim.TokenGrants())
	}
}

// TestAuthorizationCodeRefusals: each binding of a code is checked, and a
// refused exchange consumes the code too.
func TestAuthorizationCodeRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, ClientID: "cid", ClientSecret: "csecret"})
	const verifier = "the-right-verifier-0123456789-0123456789-0123"
	fresh := func() string {
		_, q := e.authorize(authorizeParams("s", s256(verifier)))
		return q.Get("code")
	}
	cases := []struct {
		name string
		edit func(url.Values)
	}{
		{"wrong verifier", func(f url.Values) { f.Set("code_verifier", "another-verifier-0123456789-0123456789-01234") }},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }},
		{"other redirect_uri", func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:9999/callback") }},
	}
	for _, c := range cases {
		code := fresh()
		form := codeForm(code, verifier)
		c.edit(form)
		if status, tr, _ := e.postToken(form); status != http.StatusBadRequest || tr.Error != "invalid_grant" {
			t.Errorf("%s: %d %+v", c.name, status, tr)
		}
		if status, _, _ := e.postToken(codeForm(code, verifier)); status != http.StatusBadRequest {
			t.Errorf("%s: the code survived a refused exchange (%d)", c.name, status)
		}
	}
	if status, tr, _ := e.postToken(codeForm("sim-code-made-up", verifier)); status != http.StatusBadRequest || tr.Error != "invalid_grant" {
		t.Errorf("unknown code: %d %+v", status, tr)
	}
	// Wrong client credentials: invalid_client.
	form := codeForm(fresh(), verifier)
	form.Set("client_secret", "nope")
	if status, tr, _ := e.postToken(form); status != http.StatusUnauthorized || tr.Error != "invalid_client" {
		t.Errorf("wrong secret: %d %+v", status, tr)
	}
	// An expired code.
	code := fresh()
	e.clock.Advance(codeTTL)
	if status, tr, _ := e.postToken(codeForm(code, verifier)); status != http.StatusBadRequest || tr.Error != "invalid_grant" {
		t.Errorf("expired code: %d %+v", status, tr)
	}
	// Without PKCE the code is bound to the redirect URI only.
	_, q := e.authorize(authorizeParams("s", ""))
	if status, _, _ := e.postToken(codeForm(q.Get("code"), "")); status != http.StatusOK {
		t.Errorf("code without PKCE: %d", status)
	}
	if e.sim.TokenGrants() != 1 {
		t.Errorf("TokenGrants() = %d, want 1", e.sim.TokenGrants())
	}
}

// TestAuthorizeErrors: refused consent and bad requests come back to the
// redirect URI with an error and the state; a bad client or redirect URI is
// a page, never a redirect.
func TestAuthorizeErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, ClientID: "cid", Knobs: Knobs{DenyConsent: true}})
	status, q := e.authorize(authorizeParams("st-9", ""))
	if status != http.StatusFound || q.Get("error") != "access_denied" || q.Get("state") != "st-9" || q.Get("code") != "" {
		t.Errorf("denied consent: %d %v", status, q)
	}
	if err := e.sim.UpdateKnobs(func(k *Knobs) { k.DenyConsent = false }); err != nil {
		t.Fatal(err)
	}
	p := authorizeParams("st", "")
	p.Set("response_type", "token")
	if status, q := e.authorize(p); status != http.StatusFound || q.Get("error") != "unsupported_response_type" {
		t.Errorf("response_type=token: %d %v", status, q)
	}
	p = authorizeParams("st", "challenge")
	p.Set("code_challenge_method", "plain")
	if status, q := e.authorize(p); status != http.StatusFound || q.Get("error") != "invalid_request" {
		t.Errorf("plain PKCE: %d %v", status, q)
	}
	for name, edit := range map[string]func(url.Values){
		"unknown client":    func(v url.Values) { v.Set("client_id", "other") },
		"no redirect_uri":   func(v url.Values) { v.Del("redirect_uri") },
		"relative redirect": func(v url.Values) { v.Set("redirect_uri", "/callback") },
	} {
		p := authorizeParams("st", "")
		edit(p)
		if status, q := e.authorize(p); status != http.StatusBadRequest || q != nil {
			t.Errorf("%s: %d %v", name, status, q)
		}
	}
	if e.sim.PendingCodes() != 0 {
		t.Errorf("refusals issued codes: %d", e.sim.PendingCodes())
	}
	// Without OAuth the endpoint refuses.
	plain := newEnv(t, Options{Users: 5})
	if status, q := plain.authorize(authorizeParams("st", "")); status != http.StatusBadRequest || q != nil {
		t.Errorf("no OAuth: %d %v", status, q)
	}
}

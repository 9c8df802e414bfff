package apisim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5})
	cases := []struct{ name, header string }{
		{"no header", ""}, {"empty bearer", "Bearer "}, {"basic", "Basic dXNlcjpwYXNz"}, {"bare token", "abc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v2/users", nil)
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var d doc
			body, _ := io.ReadAll(resp.Body)
			mustUnmarshal(t, body, &d)
			if resp.StatusCode != http.StatusUnauthorized || len(d.Errors) != 1 || d.Errors[0].ID != "unauthorized" ||
				resp.Header.Get("Content-Type") != "application/vnd.api+json" || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%d %s %s", resp.StatusCode, resp.Header, body)
			}
		})
	}
	e.token = "anything-goes"
	e.getDoc("/api/v2/users", http.StatusOK)
}

func TestStaticToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, Token: "s3cret"})
	e.getDoc("/api/v2/users", http.StatusOK)
	e.token = "wrong"
	e.getDoc("/api/v2/users", http.StatusUnauthorized)
}

// tokenResponse is the token endpoint's JSON.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	CreatedAt    int64  `json:"created_at"`
	Error        string `json:"error"`
}

func (e *env) postToken(form url.Values) (int, tokenResponse, http.Header) {
	e.t.Helper()
	resp, err := e.srv.Client().PostForm(e.srv.URL+"/oauth/token", form)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var tr tokenResponse
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		mustUnmarshal(e.t, body, &tr)
	}
	return resp.StatusCode, tr, resp.Header
}

func refreshForm(refresh string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh},
		"client_id": {"cid"}, "client_secret": {"csecret"}}
}

func TestOAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, RefreshToken: "rt-initial", ClientID: "cid", ClientSecret: "csecret",
		Token: "static", TokenTTL: 10 * time.Minute})
	e.token = "not-issued"
	e.getDoc("/api/v2/users", http.StatusUnauthorized)

	status, tr, hdr := e.postToken(refreshForm("rt-initial"))
	if status != http.StatusOK || tr.AccessToken == "" || tr.TokenType != "bearer" || tr.ExpiresIn != 600 ||
		tr.RefreshToken == "" || tr.RefreshToken == "rt-initial" || tr.CreatedAt != testEpoch.Unix() || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("grant: %d %+v", status, tr)
	}
	if e.sim.RefreshToken() != tr.RefreshToken || e.sim.TokenGrants() != 1 {
		t.Errorf("RefreshToken() = %q, TokenGrants() = %d", e.sim.RefreshToken(), e.sim.TokenGrants())
	}
	e.token = tr.AccessToken
	e.getDoc("/api/v2/users", http.StatusOK)

	// The old refresh token stopped working; the new one works once.
	if status, tr, _ := e.postToken(refreshForm("rt-initial")); status != http.StatusBadRequest || tr.Error != "invalid_grant" {
		t.Errorf("reused refresh token: %d %+v", status, tr)
	}
	status, tr2, _ := e.postToken(refreshForm(tr.RefreshToken))
	if status != http.StatusOK || tr2.AccessToken == tr.AccessToken {
		t.Fatalf("second grant: %d %+v", status, tr2)
	}

	// Both access tokens are valid until they expire on the injected clock.
	e.getDoc("/api/v2/users", http.StatusOK)
	e.clock.Advance(10*time.Minute - time.Millisecond)
	e.getDoc("/api/v2/users", http.StatusOK)
	e.clock.Advance(time.Millisecond)
	d := e.getDoc("/api/v2/users", http.StatusUnauthorized)
	if !strings.Contains(d.Errors[0].Detail, "expired") {
		t.Errorf("expired token: %+v", d.Errors)
	}
	e.token = "static"
	e.getDoc("/api/v2/users", http.StatusOK)

	// ExpireTokens ends a fresh token at once.
	_, tr3, _ := e.postToken(refreshForm(tr2.RefreshToken))
	e.token = tr3.AccessToken
	e.getDoc("/api/v2/users", http.StatusOK)
	e.sim.ExpireTokens()
	e.getDoc("/api/v2/users", http.StatusUnauthorized)
	if e.sim.TokenGrants() != 3 {
		t.Errorf("TokenGrants() = %d, want 3", e.sim.TokenGrants())
	}
}

func TestOAuthErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, RefreshToken: "rt", ClientID: "cid", ClientSecret: "csecret"})
	cases := []struct {
		name   string
		form   url.Values
		status int
		code   string
	}{
		{"wrong grant", url.Values{"grant_type": {"password"}, "client_id": {"cid"}, "client_secret": {"csecret"}}, 400, "unsupported_grant_type"},
		{"wrong secret", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt"}, "client_id": {"cid"}, "client_secret": {"nope"}}, 401, "invalid_client"},
		{"wrong client", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt"}, "client_id": {"x"}, "client_secret": {"csecret"}}, 401, "invalid_client"},
		{"unknown refresh token", refreshForm("other"), 400, "invalid_grant"},
	}
	for _, c := range cases {
		if status, tr, _ := e.postToken(c.form); status != c.status || tr.Error != c.code {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, tr.Error, c.status, c.code)
		}
	}
	if e.sim.RefreshToken() != "rt" || e.sim.TokenGrants() != 0 {
		t.Error("failed grants changed the state")
	}
	// Client credentials may come as HTTP Basic.
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/oauth/token",
		strings.NewReader("grant_type=refresh_token&refresh_token=rt"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("cid", "csecret")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("basic client auth: %d", resp.StatusCode)
	}
	// The token endpoint can be made to refuse.
	e.sim.FailTokenNext(1, 0)
	status, _, hdr := e.postToken(refreshForm(e.sim.RefreshToken()))
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" {
		t.Errorf("FailTokenNext: %d %v", status, hdr)
	}
	if status, _, _ := e.postToken(refreshForm(e.sim.RefreshToken())); status != http.StatusOK {
		t.Errorf("after FailTokenNext: %d", status)
	}
	// Without OAuth configured the endpoint refuses.
	plain := newEnv(t, Options{Users: 5})
	var body map[string]string
	resp, err = plain.srv.Client().PostForm(plain.srv.URL+"/oauth/token", refreshForm("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Errorf("no OAuth: %d %v %v", resp.StatusCode, body, err)
	}
}

// TestRevokeTokens: a revoked grant refuses every access token (the static
// one too) with 401 and the refresh token with invalid_grant.
func TestRevokeTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, RefreshToken: "rt-initial", ClientID: "cid", ClientSecret: "csecret",
		Token: "static", TokenTTL: 10 * time.Minute})
	_, tr, _ := e.postToken(refreshForm("rt-initial"))
	e.token = tr.AccessToken
	e.getDoc("/api/v2/users", http.StatusOK)
	e.sim.RevokeTokens()
	if d := e.getDoc("/api/v2/users", http.StatusUnauthorized); !strings.Contains(d.Errors[0].Detail, "revoked") {
		t.Errorf("revoked token: %+v", d.Errors)
	}
	e.token = "static"
	e.getDoc("/api/v2/users", http.StatusUnauthorized)
	if status, got, _ := e.postToken(refreshForm(tr.RefreshToken)); status != http.StatusBadRequest || got.Error != "invalid_grant" {
		t.Errorf("refresh after the revocation: %d %+v", status, got)
	}
}

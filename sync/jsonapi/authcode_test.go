package jsonapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

func TestAuthorizationRequest(t *testing.T) {
	t.Parallel()
	r, err := NewAuthorizationRequest("https://api.example.com/oauth/authorize?prompt=consent", "cid",
		"http://127.0.0.1:8085/callback", "users.read teams.read")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	sum := sha256.Sum256([]byte(r.Verifier))
	for k, want := range map[string]string{
		"response_type": "code", "client_id": "cid", "redirect_uri": "http://127.0.0.1:8085/callback",
		"scope": "users.read teams.read", "state": r.State, "code_challenge_method": "S256", "prompt": "consent",
		"code_challenge": base64.RawURLEncoding.EncodeToString(sum[:]),
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(r.State) != 43 || len(r.Verifier) != 43 || strings.Contains(r.URL, r.Verifier) {
		t.Errorf("state %q, verifier %q (43 base64url characters each; the verifier never in the URL)", r.State, r.Verifier)
	}
	r2, _ := NewAuthorizationRequest("https://api.example.com/oauth/authorize", "cid", "http://127.0.0.1:1/callback", "")
	if r2.State == r.State || r2.Verifier == r.Verifier || strings.Contains(r2.URL, "scope=") {
		t.Errorf("a second request reuses the state or verifier, or sends an empty scope: %+v", r2)
	}
	if _, err := NewAuthorizationRequest("/oauth/authorize", "cid", "http://127.0.0.1:1/callback", ""); err == nil {
		t.Error("a relative authorize URL was accepted")
	}

	cases := []struct {
		name  string
		query url.Values
		check func(error) bool
	}{
		{"ok", url.Values{"code": {"c1"}, "state": {r.State}}, func(err error) bool { return err == nil }},
		{"wrong state", url.Values{"code": {"c1"}, "state": {r2.State}}, func(err error) bool { return errors.Is(err, ErrStateMismatch) }},
		{"no state", url.Values{"code": {"c1"}}, func(err error) bool { return errors.Is(err, ErrStateMismatch) }},
		{"denied", url.Values{"error": {"access_denied"}, "error_description": {"no\x1b[31m way"}, "state": {r.State}}, func(err error) bool {
			var ae *AuthorizeError
			return errors.As(err, &ae) && ae.Code == "access_denied" && !strings.Contains(err.Error(), "\x1b") && !errors.Is(err, ErrStateMismatch)
		}},
		// any web page can send the listener a refusal; without this
		// login's state it is a mismatch (which the listener ignores).
		{"denied without state", url.Values{"error": {"access_denied"}}, func(err error) bool {
			var ae *AuthorizeError
			return errors.Is(err, ErrStateMismatch) && errors.As(err, &ae) && ae.Code == "access_denied"
		}},
		{"denied with another state", url.Values{"error": {"access_denied"}, "state": {r2.State}}, func(err error) bool { return errors.Is(err, ErrStateMismatch) }},
		{"no code", url.Values{"state": {r.State}}, func(err error) bool { return err != nil && !errors.Is(err, ErrStateMismatch) }},
	}
	for _, c := range cases {
		code, err := r.Callback(c.query)
		if !c.check(err) || (err == nil) != (code == "c1") {
			t.Errorf("%s: code %q, err %v", c.name, code, err)
		}
	}
}

// grantStore is a GrantStore in memory.
type grantStore struct {
	MemoryTokenStore
	mu      sync.Mutex
	access  string
	expires time.Time
	scope   string
	grants  int
	failure string // code: message
}

func (g *grantStore) SaveGrant(ctx context.Context, refresh, access string, expires time.Time, scope string) error {
	g.mu.Lock()
	g.access, g.expires, g.failure = access, expires, ""
	if scope != "" {
		g.scope = scope
	}
	g.grants++
	g.mu.Unlock()
	return g.Save(ctx, refresh)
}

func (g *grantStore) SaveRefreshFailure(_ context.Context, code, message string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failure = code + ": " + message
	return nil
}

// authorizeAt follows the simulator's authorize endpoint by hand, as a
// browser would, and returns the callback's query.
func authorizeAt(t *testing.T, r AuthorizationRequest) url.Values {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %v", resp.StatusCode, err)
	}
	return loc.Query()
}

// TestExchangeCodeWithSimulator runs the whole flow against the simulator:
// the code exchanged once yields tokens, the refresh token and the access
// token's expiry are saved, the API answers with the access token at once,
// the stored refresh token is the one rotation continues from, and a
// second exchange of the code is an invalid_grant that names no secret.
func TestExchangeCodeWithSimulator(t *testing.T) {
	t.Parallel()
	sim := apisim.New(apisim.Options{Users: 20, ClientID: "cid", ClientSecret: secretClient, TokenTTL: time.Hour})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	var logs syncBuffer
	store := &grantStore{}
	o, err := NewOAuth(OAuthConfig{TokenURL: srv.URL + "/oauth/token", ClientID: "cid", ClientSecret: secretClient,
		Store: store, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	const redirect = "http://127.0.0.1:8085/callback"
	r, err := NewAuthorizationRequest(srv.URL+"/oauth/authorize", "cid", redirect, "users.read")
	if err != nil {
		t.Fatal(err)
	}
	code, err := r.Callback(authorizeAt(t, r))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	g, err := o.ExchangeCode(context.Background(), code, redirect, r.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := store.Load(context.Background())
	if stored == "" || stored != sim.RefreshToken() || store.access == "" || store.grants != 1 {
		t.Errorf("stored refresh %q (simulator's %q), access %q, grants %d", stored, sim.RefreshToken(), store.access, store.grants)
	}
	if g.ExpiresAt.Before(before.Add(59*time.Minute)) || !g.ExpiresAt.Equal(store.expires) || g.Scope == "" {
		t.Errorf("grant %+v, stored expiry %v", g, store.expires)
	}
	client, err := NewClient(Options{BaseURL: srv.URL, Auth: o})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(context.Background(), "users", Query{}); err != nil {
		t.Fatalf("API with the exchanged access token: %v", err)
	}
	if sim.TokenGrants() != 1 {
		t.Errorf("TokenGrants() = %d: the exchanged access token was not used as is", sim.TokenGrants())
	}
	// Rotation continues from the stored token, and records the new expiry.
	sim.ExpireTokens()
	if _, err := client.Get(context.Background(), "users", Query{}); err != nil {
		t.Fatalf("API after the access token expired: %v", err)
	}
	if now, _ := store.Load(context.Background()); now == stored || now != sim.RefreshToken() || store.grants != 2 {
		t.Errorf("after a refresh: stored %q, simulator's %q, grants %d", now, sim.RefreshToken(), store.grants)
	}
	// A revoked grant: the refusal is recorded, without a secret.
	sim.RevokeTokens()
	if _, err := client.Get(context.Background(), "users", Query{}); err == nil {
		t.Fatal("API after the grant was revoked: no error")
	}
	store.mu.Lock()
	failure := store.failure
	store.mu.Unlock()
	if !strings.HasPrefix(failure, "invalid_grant: refreshing OAuth token: authentication failed: 400 Bad Request: invalid_grant") {
		t.Errorf("recorded failure %q", failure)
	}
	// The code is single-use.
	_, err = o.ExchangeCode(context.Background(), code, redirect, r.Verifier)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Code != "invalid_grant" {
		t.Fatalf("reused code: %v", err)
	}
	all := err.Error() + logs.String() + failure
	for _, secret := range []string{code, r.Verifier, r.State, secretClient, stored, store.access} {
		if strings.Contains(all, secret) {
			t.Errorf("a secret appears in the error or logs: %s", all)
		}
	}
	if !strings.Contains(logs.String(), "authorization code exchanged") {
		t.Error("the debug log was not captured")
	}
}

// TestExchangeCodeWithoutRefreshToken: a token response without a refresh
// token is an error, and nothing is stored.
func TestExchangeCodeWithoutRefreshToken(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at","token_type":"bearer","expires_in":60}`))
	})
	store := &grantStore{}
	o, err := NewOAuth(OAuthConfig{TokenURL: srv.URL + "/oauth/token", ClientID: "cid", ClientSecret: secretClient, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.ExchangeCode(context.Background(), "code", "http://127.0.0.1:1/callback", "")
	if err == nil || !strings.Contains(err.Error(), "no refresh token") || store.grants != 0 || store.Saves() != 0 {
		t.Errorf("err %v, %d saves", err, store.Saves())
	}
	assertNoSecrets(t, err.Error())
}

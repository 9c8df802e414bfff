package jsonapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenServer is an OAuth token endpoint and an API in one httptest server.
// Refresh tokens rotate: each use returns a new one and retires the old one.
type tokenServer struct {
	t         *testing.T
	URL       string
	expiresIn int

	mu          sync.Mutex
	refreshOK   map[string]bool // refresh tokens that work
	accessOK    map[string]bool // access tokens that work
	issued      int
	used        []string // refresh tokens received, in order
	fail        []int    // statuses to answer before the next success (-1: drop the connection)
	refuseWith  int      // status of a refusal (default 400)
	refuseAPI   bool     // the API refuses every access token
	apiRequests []string // bearer tokens the API saw
	block       chan struct{}
	started     chan struct{}
}

func newTokenServer(t *testing.T, validRefresh ...string) *tokenServer {
	t.Helper()
	ts := &tokenServer{t: t, expiresIn: 7200, refreshOK: map[string]bool{}, accessOK: map[string]bool{},
		refuseWith: http.StatusBadRequest}
	for _, rt := range validRefresh {
		ts.refreshOK[rt] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", ts.token)
	mux.HandleFunc("/api/v2/", ts.api)
	ts.URL = newServer(t, mux.ServeHTTP).URL
	return ts
}

func (ts *tokenServer) token(w http.ResponseWriter, r *http.Request) {
	if ts.block != nil {
		select {
		case ts.started <- struct{}{}:
		default:
		}
		<-ts.block
	}
	if err := r.ParseForm(); err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		http.Error(w, "bad form", http.StatusUnsupportedMediaType)
		return
	}
	if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("client_id") != "client-1" ||
		r.PostForm.Get("client_secret") != secretClient {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	rt := r.PostForm.Get("refresh_token")
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.used = append(ts.used, rt)
	if len(ts.fail) > 0 {
		status := ts.fail[0]
		ts.fail = ts.fail[1:]
		if status < 0 {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(status)
		_, _ = w.Write([]byte("Retry later"))
		return
	}
	if !ts.refreshOK[rt] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ts.refuseWith)
		// A careless server echoing the token: the client must redact it.
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"The refresh token %s is invalid"}`, rt)
		return
	}
	delete(ts.refreshOK, rt)
	ts.issued++
	access := fmt.Sprintf("%s-%d", secretAccess, ts.issued)
	rotated := fmt.Sprintf("%s-%d", secretRotated, ts.issued)
	ts.accessOK[access], ts.refreshOK[rotated] = true, true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "bearer",
		"expires_in": ts.expiresIn, "refresh_token": rotated, "scope": "users.read teams.read", "created_at": 1800000000})
}

func (ts *tokenServer) api(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	ts.mu.Lock()
	ts.apiRequests = append(ts.apiRequests, token)
	ok := ts.accessOK[token] && !ts.refuseAPI
	ts.mu.Unlock()
	if !ok {
		writeDoc(w, http.StatusUnauthorized, `{"errors":[{"id":"unauthorized","title":"Unauthorized"}]}`)
		return
	}
	writeDoc(w, http.StatusOK, pageBody(`{}`, 1))
}

func (ts *tokenServer) revokeAccessTokens() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.accessOK = map[string]bool{}
}

func (ts *tokenServer) refreshesUsed() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.used...)
}

func (ts *tokenServer) apiBearers() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.apiRequests...)
}

// newOAuthClient returns an API client authenticating with OAuth against ts.
func newOAuthClient(t *testing.T, ts *tokenServer, clock *fakeClock, store TokenStore, change func(*OAuthConfig)) (*Client, *OAuth) {
	t.Helper()
	cfg := OAuthConfig{
		TokenURL:     ts.URL + "/oauth/token",
		ClientID:     "client-1",
		ClientSecret: secretClient,
		RefreshToken: secretRefresh,
		Store:        store,
		Clock:        clock,
		UserAgent:    testUserAgent,
	}
	if change != nil {
		change(&cfg)
	}
	auth, err := NewOAuth(cfg)
	if err != nil {
		t.Fatalf("NewOAuth: %v", err)
	}
	return newClient(t, ts.URL, clock, func(o *Options) { o.Auth = auth }), auth
}

func get(ctx context.Context, c *Client) error {
	_, err := c.Get(ctx, "users", Query{})
	return err
}

func TestOAuthRefreshesBeforeExpiry(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	clock := newFakeClock(t)
	c, auth := newOAuthClient(t, ts, clock, nil, nil)
	ctx := context.Background()
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	clock.Advance(7200*time.Second - 61*time.Second) // just before the 60s margin
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	if auth.Refreshes() != 1 {
		t.Fatalf("%d refreshes before the margin, want 1", auth.Refreshes())
	}
	clock.Advance(2 * time.Second) // inside the margin: refresh before use
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	if auth.Refreshes() != 2 {
		t.Errorf("%d refreshes, want 2", auth.Refreshes())
	}
	bearers := ts.apiBearers()
	want := []string{secretAccess + "-1", secretAccess + "-1", secretAccess + "-2"}
	if strings.Join(bearers, " ") != strings.Join(want, " ") {
		t.Errorf("bearers %v, want %v", bearers, want)
	}
	if used := ts.refreshesUsed(); len(used) != 2 || used[0] != secretRefresh || used[1] != secretRotated+"-1" {
		t.Errorf("refresh tokens used %v", used)
	}
}

func TestOAuthShortLifetimeUsesTenPercentMargin(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	ts.expiresIn = 100
	clock := newFakeClock(t)
	c, auth := newOAuthClient(t, ts, clock, nil, nil)
	_ = get(context.Background(), c)
	clock.Advance(89 * time.Second)
	_ = get(context.Background(), c)
	if auth.Refreshes() != 1 {
		t.Errorf("%d refreshes at 89s of 100s", auth.Refreshes())
	}
	clock.Advance(2 * time.Second)
	_ = get(context.Background(), c)
	if auth.Refreshes() != 2 {
		t.Errorf("%d refreshes at 91s of 100s", auth.Refreshes())
	}
}

func TestOAuthRefreshOn401ThenRetry(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	clock := newFakeClock(t)
	c, auth := newOAuthClient(t, ts, clock, nil, nil)
	ctx := context.Background()
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	ts.revokeAccessTokens() // the access token dies early
	if err := get(ctx, c); err != nil {
		t.Fatalf("after revocation: %v", err)
	}
	if auth.Refreshes() != 2 {
		t.Errorf("%d refreshes, want 2", auth.Refreshes())
	}
	want := []string{secretAccess + "-1", secretAccess + "-1", secretAccess + "-2"}
	if got := ts.apiBearers(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("bearers %v, want %v", got, want)
	}
	if st := c.Stats(); st.ByStatus[401] != 1 || st.Retries != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestOAuthSecond401IsAuthError(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	clock := newFakeClock(t)
	c, auth := newOAuthClient(t, ts, clock, nil, nil)
	ts.mu.Lock()
	ts.refuseAPI = true
	ts.mu.Unlock()
	err := get(context.Background(), c)
	var ae *AuthError
	var re *ResponseError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !errors.As(err, &re) || re.Errors[0].ID != "unauthorized" {
		t.Fatalf("error %v, want an *AuthError wrapping a 401 *ResponseError", err)
	}
	if len(ts.apiBearers()) != 2 || auth.Refreshes() != 2 {
		t.Errorf("%d API requests, %d refreshes; want 2 and 2", len(ts.apiBearers()), auth.Refreshes())
	}
	assertNoSecrets(t, err.Error())
}

func TestStaticToken401IsAuthErrorWithoutRetry(t *testing.T) {
	t.Parallel()
	var rec recorder
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		writeDoc(w, http.StatusUnauthorized, `{"errors":[{"id":"unauthorized"}]}`)
	})
	c := newClient(t, srv.URL, newFakeClock(t), nil)
	err := get(context.Background(), c)
	var ae *AuthError
	if !errors.As(err, &ae) || rec.count() != 1 {
		t.Fatalf("error %v after %d requests", err, rec.count())
	}
	assertNoSecrets(t, err.Error())
}

func TestOAuthSavesRotatedRefreshToken(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	store := NewMemoryTokenStore("")
	c, _ := newOAuthClient(t, ts, newFakeClock(t), store, nil)
	ctx := context.Background()
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Load(ctx); got != secretRotated+"-1" {
		t.Errorf("stored %q", got)
	}
	ts.revokeAccessTokens()
	if err := get(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Load(ctx); got != secretRotated+"-2" || store.Saves() != 2 {
		t.Errorf("stored %q after %d saves", got, store.Saves())
	}
}

func TestOAuthPrefersStoredRefreshToken(t *testing.T) {
	t.Parallel()
	const stored = "STORED-r7q-SECRET"
	ts := newTokenServer(t, secretRefresh, stored)
	store := NewMemoryTokenStore(stored)
	c, _ := newOAuthClient(t, ts, newFakeClock(t), store, nil)
	if err := get(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if used := ts.refreshesUsed(); len(used) != 1 || used[0] != stored {
		t.Errorf("refresh tokens used %v, want the stored one", used)
	}
}

func TestOAuthFallsBackToConfiguredWhenStoredRefused(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized} {
		const stored = "STORED-dead-SECRET"
		ts := newTokenServer(t, secretRefresh) // the stored token is not valid
		ts.refuseWith = status
		store := NewMemoryTokenStore(stored)
		clock := newFakeClock(t)
		c, _ := newOAuthClient(t, ts, clock, store, nil)
		if err := get(context.Background(), c); err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if used := ts.refreshesUsed(); len(used) != 2 || used[0] != stored || used[1] != secretRefresh {
			t.Errorf("%d: refresh tokens used %v, want stored then configured", status, used)
		}
		if got, _ := store.Load(context.Background()); got != secretRotated+"-1" {
			t.Errorf("%d: stored %q", status, got)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("%d: a refusal was retried: sleeps %v", status, clock.Sleeps())
		}
	}
}

func TestOAuthBothRefreshTokensRefused(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t) // nothing is valid
	store := NewMemoryTokenStore("STORED-dead-SECRET")
	clock := newFakeClock(t)
	c, _ := newOAuthClient(t, ts, clock, store, nil)
	err := get(context.Background(), c)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "invalid_grant" {
		t.Fatalf("error %v, want an invalid_grant *AuthError", err)
	}
	if len(ts.refreshesUsed()) != 2 || len(clock.Sleeps()) != 0 || len(ts.apiBearers()) != 0 {
		t.Errorf("token calls %d, sleeps %v, API calls %d", len(ts.refreshesUsed()), clock.Sleeps(), len(ts.apiBearers()))
	}
	if !strings.Contains(err.Error(), "The refresh token REDACTED is invalid") {
		t.Errorf("error %q", err)
	}
	assertNoSecrets(t, err.Error())
	if strings.Contains(err.Error(), "STORED-dead-SECRET") {
		t.Errorf("error leaks the stored token: %s", err)
	}
}

func TestOAuthConcurrentRequestsRefreshOnce(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	ts.block, ts.started = make(chan struct{}), make(chan struct{}, 1)
	c, auth := newOAuthClient(t, ts, newFakeClock(t), nil, nil)
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() { errs <- get(context.Background(), c) }()
	}
	<-ts.started // one refresh is in flight; the others must wait for it
	close(ts.block)
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := len(ts.refreshesUsed()); got != 1 || auth.Refreshes() != 1 {
		t.Errorf("%d token requests, %d refreshes; want 1", got, auth.Refreshes())
	}
	for _, b := range ts.apiBearers() {
		if b != secretAccess+"-1" {
			t.Errorf("bearer %q", b)
		}
	}
}

func TestOAuthConcurrentTokenCallsAfterExpiryRefreshOnce(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	clock := newFakeClock(t)
	_, auth := newOAuthClient(t, ts, clock, nil, nil)
	ctx := context.Background()
	if _, err := auth.Token(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if tok, err := auth.Token(ctx); err != nil || tok != secretAccess+"-2" {
				t.Errorf("Token = %q, %v", tok, err)
			}
		})
	}
	wg.Wait()
	if auth.Refreshes() != 2 {
		t.Errorf("%d refreshes, want 2", auth.Refreshes())
	}
}

func TestOAuthTokenEndpointFailuresAreRetried(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	ts.fail = []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, -1}
	clock := newFakeClock(t)
	c, auth := newOAuthClient(t, ts, clock, nil, nil)
	if err := get(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	// 429 and 503 carry Retry-After: 2; the dropped connection backs off 4s (1s doubled twice).
	want := []time.Duration{2 * time.Second, 2 * time.Second, 4 * time.Second}
	if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
	if len(ts.refreshesUsed()) != 4 || auth.Refreshes() != 1 {
		t.Errorf("%d token requests, %d refreshes", len(ts.refreshesUsed()), auth.Refreshes())
	}
}

func TestOAuthTokenEndpointRetriesAreBounded(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	ts.fail = []int{500, 500, 500, 500, 500}
	c, _ := newOAuthClient(t, ts, newFakeClock(t), nil, func(cfg *OAuthConfig) { cfg.MaxAttempts = 3 })
	err := get(context.Background(), c)
	var re *ResponseError
	if !errors.As(err, &re) || re.StatusCode != 500 || !strings.Contains(err.Error(), "giving up after 3 attempts") {
		t.Fatalf("error %v", err)
	}
	var ae *AuthError
	if errors.As(err, &ae) {
		t.Error("a 5xx from the token endpoint is not an auth error")
	}
	if len(ts.refreshesUsed()) != 3 {
		t.Errorf("%d token requests", len(ts.refreshesUsed()))
	}
	assertNoSecrets(t, err.Error())
}

// failingStore fails its first Save.
type failingStore struct {
	MemoryTokenStore
	mu     sync.Mutex
	failed bool
}

func (f *failingStore) Save(ctx context.Context, token string) error {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return errors.New("database is down")
	}
	return f.MemoryTokenStore.Save(ctx, token)
}

func TestOAuthSaveFailureIsRetried(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	store := &failingStore{}
	c, auth := newOAuthClient(t, ts, newFakeClock(t), store, nil)
	err := get(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "saving rotated refresh token: database is down") {
		t.Fatalf("error %v", err)
	}
	if err := get(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Load(context.Background()); got != secretRotated+"-1" || auth.Refreshes() != 1 {
		t.Errorf("stored %q after %d refreshes", got, auth.Refreshes())
	}
}

func TestNewOAuthValidation(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]OAuthConfig{
		"no url":       {ClientID: "a", ClientSecret: secretClient, RefreshToken: secretRefresh},
		"no client":    {TokenURL: "https://h/oauth/token", RefreshToken: secretRefresh},
		"no refresh":   {TokenURL: "https://h/oauth/token", ClientID: "a", ClientSecret: secretClient},
		"relative url": {TokenURL: "/oauth/token", ClientID: "a", ClientSecret: secretClient, RefreshToken: secretRefresh},
	} {
		_, err := NewOAuth(cfg)
		if err == nil || !strings.Contains(err.Error(), "OAuthConfig.") {
			t.Errorf("%s: error %v", name, err)
			continue
		}
		assertNoSecrets(t, err.Error())
	}
	auth, err := NewOAuth(OAuthConfig{TokenURL: "https://h/oauth/token", ClientID: "a", ClientSecret: secretClient, RefreshToken: secretRefresh})
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, fmt.Sprintf("%v %+v %s", auth, auth, auth))
	assertNoSecrets(t, fmt.Sprintf("%v %+v %s", StaticToken(secretAccess), StaticToken(secretAccess), StaticToken(secretAccess)))
}

// TestOAuthReplicaRotatedTheToken: two processes share one store. The first
// rotates the refresh token; when the second's in-memory token is refused,
// it picks up the one the first stored instead of failing.
func TestOAuthReplicaRotatedTheToken(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	ts.expiresIn = 60
	store := NewMemoryTokenStore("")
	clockA, clockB := newFakeClock(t), newFakeClock(t)
	a, _ := newOAuthClient(t, ts, clockA, store, nil)
	b, _ := newOAuthClient(t, ts, clockB, store, nil)
	if err := get(context.Background(), a); err != nil { // A: configured → rotated-1, stored
		t.Fatal(err)
	}
	if err := get(context.Background(), b); err != nil { // B: reads rotated-1 → rotated-2, stored
		t.Fatal(err)
	}
	clockA.Advance(2 * time.Minute) // A's access token expires; its refresh token (rotated-1) is dead
	if err := get(context.Background(), a); err != nil {
		t.Fatalf("A after B rotated the token: %v", err)
	}
	used := ts.refreshesUsed()
	if want := []string{secretRefresh, secretRotated + "-1", secretRotated + "-1", secretRotated + "-2"}; fmt.Sprint(used) != fmt.Sprint(want) {
		t.Errorf("refresh tokens used %v, want %v", used, want)
	}
	if got, _ := store.Load(context.Background()); got != secretRotated+"-3" {
		t.Errorf("stored %q, want the newest", got)
	}
}

// lateStore saves a moment after it is asked, as a replica that has just
// rotated the token and not yet written it.
type lateStore struct{ *MemoryTokenStore }

func (s lateStore) Save(ctx context.Context, refreshToken string) error {
	go func() {
		time.Sleep(3 * rotationPause / 2)
		_ = s.MemoryTokenStore.Save(ctx, refreshToken)
	}()
	return nil
}

// TestOAuthReplicaStillSavingTheToken: the first process rotated the refresh
// token and is still saving it when the second's is refused; the second
// waits for the stored one instead of failing.
func TestOAuthReplicaStillSavingTheToken(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, secretRefresh)
	store := lateStore{NewMemoryTokenStore("")}
	a, _ := newOAuthClient(t, ts, newFakeClock(t), store, nil)
	b, _ := newOAuthClient(t, ts, newFakeClock(t), store, nil)
	if err := get(context.Background(), a); err != nil { // A: configured → rotated-1, saved late
		t.Fatal(err)
	}
	if err := get(context.Background(), b); err != nil { // B: configured, refused → waits for rotated-1
		t.Fatalf("B while A was saving the rotated token: %v", err)
	}
}

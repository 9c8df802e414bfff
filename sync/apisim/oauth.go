package apisim

import (
	"cmp"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/usersync/usersync/schema"
)

// authState is the OAuth side of the simulator: the one valid refresh token
// (it rotates on every grant), the issued access tokens and the
// authorization codes not yet exchanged.
type authState struct {
	mu         sync.Mutex
	rng        rng
	refresh    string
	issued     map[string]int64 // access token → expiry, Unix ms
	codes      map[string]authCode
	grants     int64
	failNext   int
	failStatus int
	revoked    bool   // RevokeTokens: every token refused until a code is exchanged
	replaced   string // ReplaceToken: the static token now accepted instead of Options.Token
	scope      string // the grant's, as its authorization code asked; "" for the catalog's read scopes
}

func (a *authState) init(r rng, refresh string) {
	a.rng, a.refresh, a.issued, a.codes = r, refresh, map[string]int64{}, map[string]authCode{}
}

func (a *authState) newToken(prefix string) string {
	b := []byte(prefix)
	for range 2 {
		b = strconv.AppendUint(b, a.rng.next(), 36)
	}
	return string(b)
}

// oauthMode reports whether OAuth is on: with a refresh token to start
// from, or with a client id alone (a refresh token then comes only from an
// authorization code).
func (s *Server) oauthMode() bool { return s.opts.RefreshToken != "" || s.opts.ClientID != "" }

// authenticate checks the bearer token of an API request.
func (s *Server) authenticate(r *http.Request) *apiError {
	unauthorized := func(detail string) *apiError {
		return &apiError{status: 401, id: "unauthorized", title: "Unauthorized", detail: detail}
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return unauthorized("A bearer token is required: send Authorization: Bearer <token>.")
	}
	s.auth.mu.Lock()
	revoked, static := s.auth.revoked, cmp.Or(s.auth.replaced, s.opts.Token)
	s.auth.mu.Unlock()
	if revoked {
		return unauthorized("The access token was revoked.")
	}
	if static != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(static)) == 1 {
		return nil
	}
	if static == "" && !s.oauthMode() {
		return nil // any token will do
	}
	if s.oauthMode() {
		s.auth.mu.Lock()
		exp, known := s.auth.issued[tok]
		s.auth.mu.Unlock()
		switch {
		case known && s.nowMs() < exp:
			return nil
		case known:
			return unauthorized("The access token expired.")
		}
	}
	return unauthorized("The access token is invalid.")
}

// serveToken implements POST /oauth/token for the refresh_token grant.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request, endpoint string) {
	oauthErr := func(status int, code, desc string) {
		body := appendString([]byte(`{"error":`), code)
		body = append(body, `,"error_description":`...)
		body = append(appendString(body, desc), '}')
		s.write(w, endpoint, nil, status, "application/json", body, false)
	}
	if r.Method != http.MethodPost {
		oauthErr(405, "invalid_request", "use POST")
		return
	}
	if !s.oauthMode() {
		oauthErr(401, "invalid_client", "OAuth is not configured on this simulator (set Options.ClientID or Options.RefreshToken)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthErr(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failNext > 0 {
		a.failNext--
		hdr := http.Header{"Retry-After": {"1"}}
		s.write(w, endpoint, hdr, a.failStatus, "text/plain; charset=utf-8", []byte("Retry later\n"), false)
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	grantType := r.PostForm.Get("grant_type")
	switch {
	case grantType != "refresh_token" && grantType != "authorization_code":
		oauthErr(400, "unsupported_grant_type", "grant_type must be refresh_token or authorization_code")
	case s.opts.ClientID != "" && id != s.opts.ClientID,
		s.opts.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) != 1:
		oauthErr(401, "invalid_client", "client authentication failed")
	case grantType == "authorization_code":
		if desc := a.redeemCode(r.PostForm, id, s.nowMs()); desc != "" {
			oauthErr(400, "invalid_grant", desc)
			return
		}
		s.grant(w, endpoint)
	case a.refresh == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("refresh_token")), []byte(a.refresh)) != 1:
		oauthErr(400, "invalid_grant", "The provided authorization grant is invalid, expired, revoked, or was issued to another client.")
	default:
		s.grant(w, endpoint)
	}
}

// grant issues an access token and rotates the refresh token; a.mu is held.
func (s *Server) grant(w http.ResponseWriter, endpoint string) {
	a := &s.auth
	now := s.nowMs()
	for tok, exp := range a.issued {
		if exp <= now {
			delete(a.issued, tok)
		}
	}
	a.revoked = false
	access := a.newToken("sim-at-")
	a.refresh = a.newToken("sim-rt-")
	a.issued[access] = now + s.opts.TokenTTL.Milliseconds()
	a.grants++
	body := appendString([]byte(`{"access_token":`), access)
	body = append(body, `,"token_type":"bearer","expires_in":`...)
	body = appendInt(body, int64(s.opts.TokenTTL/time.Second))
	body = append(body, `,"refresh_token":`...)
	body = appendString(body, a.refresh)
	scope := a.scope
	if scope == "" {
		scope = schema.ReadScopes() // a grant that asked for none, or began with Options.RefreshToken
	}
	body = append(body, `,"scope":`...)
	body = appendString(body, scope)
	body = append(body, `,"created_at":`...)
	body = appendInt(body, now/1000)
	body = append(body, '}')
	h := http.Header{"Cache-Control": {"no-store"}}
	s.write(w, endpoint, h, http.StatusOK, "application/json; charset=utf-8", body, false)
}

// RefreshToken returns the refresh token that the token endpoint accepts
// now; every grant replaces it.
func (s *Server) RefreshToken() string {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	return s.auth.refresh
}

// TokenGrants returns how many access tokens the token endpoint issued.
func (s *Server) TokenGrants() int64 {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	return s.auth.grants
}

// ExpireTokens makes every issued access token expired at once, as if its
// lifetime had passed.
func (s *Server) ExpireTokens() {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	for tok := range s.auth.issued {
		s.auth.issued[tok] = 0
	}
}

// FailTokenNext makes the next n token requests fail with status (0 means
// 429, with Retry-After: 1 and the plain-text body "Retry later", as the
// real token endpoint was seen to answer).
func (s *Server) FailTokenNext(n, status int) {
	if status == 0 {
		status = http.StatusTooManyRequests
	}
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	s.auth.failNext, s.auth.failStatus = n, status
}

// ReplaceToken revokes the static token (Options.Token, or the one a
// previous ReplaceToken gave) and accepts token instead, as an
// administrator issuing a new API token would.
func (s *Server) ReplaceToken(token string) {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	s.auth.replaced = token
}

// RevokeTokens revokes the grant, as an administrator revoking the app (or
// the token's user leaving) would: every access token is refused with 401,
// Options.Token too, and the refresh token with invalid_grant, until an
// authorization code is exchanged again (usersync auth login).
func (s *Server) RevokeTokens() {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	s.auth.revoked, s.auth.refresh = true, ""
	clear(s.auth.issued)
}

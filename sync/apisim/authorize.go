package apisim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// codeTTL is how long an authorization code may wait to be exchanged.
const codeTTL = 10 * time.Minute

// authCode is an authorization code waiting for its exchange: single use,
// bound to its client, its redirect URI and, with PKCE, its challenge.
type authCode struct {
	clientID    string
	redirectURI string
	challenge   string // S256 code_challenge, or "" without PKCE
	scope       string // as requested; "" for the default grant
	expires     int64  // Unix ms
}

// serveAuthorize implements GET /oauth/authorize of the authorization-code
// flow (RFC 6749 §4.1) with optional PKCE (RFC 7636, S256 only). There is no
// login page: consent is given at once (or refused, with the DenyConsent
// knob) and the browser is sent back to redirect_uri with code and state.
// A bad client_id or redirect_uri is shown as a page, never redirected to.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request, endpoint string) {
	page := func(status int, msg string) {
		s.write(w, endpoint, nil, status, "text/plain; charset=utf-8", []byte(msg+"\n"), false)
	}
	if r.Method != http.MethodGet {
		page(http.StatusMethodNotAllowed, "use GET")
		return
	}
	if !s.oauthMode() {
		page(http.StatusBadRequest, "OAuth is not configured on this simulator (set Options.ClientID)")
		return
	}
	q := r.URL.Query()
	clientID := q.Get("client_id")
	if s.opts.ClientID != "" && clientID != s.opts.ClientID {
		page(http.StatusBadRequest, "unknown client_id")
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || redirect.Host == "" || redirect.Fragment != "" {
		page(http.StatusBadRequest, "redirect_uri must be an absolute http(s) URL without a fragment")
		return
	}
	back := func(params url.Values) {
		if state := q.Get("state"); state != "" {
			params.Set("state", state)
		}
		u := *redirect
		v := u.Query()
		for k, vs := range params {
			v[k] = vs
		}
		u.RawQuery = v.Encode()
		hdr := http.Header{"Location": {u.String()}, "Cache-Control": {"no-store"}}
		s.write(w, endpoint, hdr, http.StatusFound, "text/plain; charset=utf-8", nil, false)
	}
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch {
	case q.Get("response_type") != "code":
		back(url.Values{"error": {"unsupported_response_type"}, "error_description": {"response_type must be code"}})
		return
	case challenge != "" && method != "S256":
		back(url.Values{"error": {"invalid_request"}, "error_description": {"code_challenge_method must be S256"}})
		return
	case s.knobs.Load().DenyConsent:
		back(url.Values{"error": {"access_denied"}, "error_description": {"The resource owner denied the request."}})
		return
	}
	back(url.Values{"code": {s.issueCode(clientID, q.Get("redirect_uri"), challenge, q.Get("scope"))}})
}

// issueCode drops the expired codes and returns a new one bound to the
// client, its redirect URI and its PKCE challenge, granting scope.
func (s *Server) issueCode(clientID, redirectURI, challenge, scope string) string {
	a := &s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	now := s.nowMs()
	for c, ac := range a.codes {
		if ac.expires <= now {
			delete(a.codes, c)
		}
	}
	code := a.newToken("sim-code-")
	a.codes[code] = authCode{clientID: clientID, redirectURI: redirectURI, challenge: challenge,
		scope: strings.Join(strings.Fields(scope), " "), expires: now + codeTTL.Milliseconds()}
	return code
}

// redeemCode checks and consumes the code of an authorization_code grant,
// whose scope the grant then holds; a.mu is held. It returns why the grant
// is refused, or "".
func (a *authState) redeemCode(form url.Values, clientID string, now int64) string {
	code := form.Get("code")
	c, ok := a.codes[code]
	delete(a.codes, code) // single use, whatever happens next
	switch {
	case !ok || c.expires <= now:
		return "The authorization code is invalid, expired, or was already used."
	case c.clientID != clientID:
		return "The authorization code was issued to another client."
	case form.Get("redirect_uri") != c.redirectURI:
		return "The redirect_uri does not match the one the code was issued for."
	case c.challenge != "":
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		if subtle.ConstantTimeCompare([]byte(want), []byte(c.challenge)) != 1 {
			return "The code_verifier does not match the code_challenge."
		}
	}
	a.scope = c.scope
	return ""
}

// PendingCodes returns how many authorization codes wait to be exchanged.
func (s *Server) PendingCodes() int {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	return len(s.auth.codes)
}

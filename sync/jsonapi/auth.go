package jsonapi

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Authenticator supplies the bearer token of each request. Implementations
// must be safe for concurrent use.
type Authenticator interface {
	// Token returns the access token to send, refreshing it if needed.
	Token(ctx context.Context) (string, error)
	// Invalidate tells the authenticator that the API refused token with a
	// 401. It reports whether a retry with a fresh Token may succeed; the
	// client then retries the request once.
	Invalidate(token string) bool
}

// StaticToken returns an Authenticator that always sends token. A 401 is
// final with it: there is nothing to refresh.
func StaticToken(token string) Authenticator { return staticToken(token) }

type staticToken string

var _ Authenticator = staticToken("")

func (s staticToken) Token(context.Context) (string, error) {
	if s == "" {
		return "", errors.New("static token is empty")
	}
	return string(s), nil
}

func (staticToken) Invalidate(string) bool { return false }

// String hides the token from fmt verbs.
func (staticToken) String() string { return "StaticToken(REDACTED)" }

// TokenStore keeps the latest OAuth refresh token across restarts. The
// token endpoint rotates refresh tokens (each refresh returns a new one and
// the old one stops working), so the new one must be saved every time.
type TokenStore interface {
	// Load returns the stored refresh token, or "" when none is stored.
	Load(ctx context.Context) (refreshToken string, err error)
	// Save replaces the stored refresh token.
	Save(ctx context.Context, refreshToken string) error
}

// GrantStore is a TokenStore that also keeps the current access token,
// when it expires, the scope the grant holds and the last refresh that
// failed. OAuth saves through it when its Store has it: after every refresh,
// rotated or not, and after an authorization-code exchange (SaveGrant), and
// after a refresh that failed (SaveRefreshFailure).
type GrantStore interface {
	TokenStore
	// SaveGrant replaces the stored refresh token, access token, its
	// expiry (zero when the token endpoint did not say) and the scope the
	// grant holds as the endpoint sent it (RFC 6749 §5.1; "" when it did
	// not say, which keeps the stored one), and forgets the last refresh
	// failure: the grant works.
	SaveGrant(ctx context.Context, refreshToken, accessToken string, expiresAt time.Time, scope string) error
	// SaveRefreshFailure records a refresh that failed: code is the OAuth
	// error code of a refusal ("invalid_grant"; the HTTP status when the
	// endpoint sent none), "" when no answer came (network, 5xx); message
	// is the error on one line, without secrets.
	SaveRefreshFailure(ctx context.Context, code, message string) error
}

// MemoryTokenStore is a TokenStore in memory, for tests and one-off runs.
// The zero value is an empty store.
type MemoryTokenStore struct {
	mu    sync.Mutex
	token string
	saves int
}

var _ TokenStore = (*MemoryTokenStore)(nil)

// NewMemoryTokenStore returns a store holding refreshToken ("" for none).
func NewMemoryTokenStore(refreshToken string) *MemoryTokenStore {
	return &MemoryTokenStore{token: refreshToken}
}

// Load implements TokenStore.
func (m *MemoryTokenStore) Load(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.token, nil
}

// Save implements TokenStore.
func (m *MemoryTokenStore) Save(_ context.Context, refreshToken string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.token = refreshToken
	m.saves++
	return nil
}

// Saves returns how many times Save was called.
func (m *MemoryTokenStore) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

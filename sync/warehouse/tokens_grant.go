package warehouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SaveGrant stores the refresh token, the access token and when it expires
// (zero: unknown). updated_at moves only when the refresh token changes, so
// it tells when the refresh token was last rotated.
func (t *TokenStore) SaveGrant(ctx context.Context, refreshToken, accessToken string, expiresAt time.Time) error {
	var exp *time.Time
	if !expiresAt.IsZero() {
		exp = &expiresAt
	}
	var access *string
	if accessToken != "" {
		access = &accessToken
	}
	_, err := t.store.pool.Exec(ctx, `INSERT INTO `+t.store.q+`.oauth_tokens AS o (token_key, refresh_token, access_token, expires_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (token_key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, access_token = EXCLUDED.access_token,
			expires_at = EXCLUDED.expires_at,
			updated_at = CASE WHEN o.refresh_token = EXCLUDED.refresh_token THEN o.updated_at ELSE now() END`,
		t.key, refreshToken, access, exp)
	if err != nil {
		return fmt.Errorf("saving the OAuth tokens: %w", err)
	}
	return nil
}

// TokenInfo describes a stored OAuth credential without its tokens.
type TokenInfo struct {
	// Stored reports whether a refresh token is stored.
	Stored bool `json:"stored"`
	// AccessExpiresAt is when the stored access token expires; nil when
	// none is stored or its expiry is unknown.
	AccessExpiresAt *time.Time `json:"access_token_expires_at"`
	// RotatedAt is when the refresh token was stored or last rotated.
	RotatedAt *time.Time `json:"refresh_token_rotated_at"`
}

// Info describes the stored credential; it never reads the tokens.
func (t *TokenStore) Info(ctx context.Context) (TokenInfo, error) {
	var info TokenInfo
	var rotated time.Time
	err := t.store.pool.QueryRow(ctx, `SELECT expires_at, updated_at FROM `+t.store.q+`.oauth_tokens WHERE token_key = $1`, t.key).
		Scan(&info.AccessExpiresAt, &rotated)
	if errors.Is(err, pgx.ErrNoRows) {
		return TokenInfo{}, nil
	}
	if err != nil {
		return TokenInfo{}, fmt.Errorf("reading the stored OAuth credential: %w", err)
	}
	info.Stored, info.RotatedAt = true, &rotated
	return info, nil
}

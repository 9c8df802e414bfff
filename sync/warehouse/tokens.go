package warehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TokenStore keeps the rotated OAuth refresh token in oauth_tokens, so it
// survives restarts and is shared by every replica. One row per credential:
// the key is a digest of the token URL and client id, never the secret.
type TokenStore struct {
	store *Store
	key   string
}

// TokenStore returns the store of the credential (tokenURL, clientID).
func (s *Store) TokenStore(tokenURL, clientID string) *TokenStore {
	sum := sha256.Sum256([]byte(tokenURL + "\x00" + clientID))
	return &TokenStore{store: s, key: hex.EncodeToString(sum[:])}
}

// Load returns the stored refresh token, or "" when none is stored.
func (t *TokenStore) Load(ctx context.Context) (string, error) {
	var tok string
	err := t.store.pool.QueryRow(ctx, `SELECT refresh_token FROM `+t.store.q+`.oauth_tokens WHERE token_key = $1`, t.key).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("loading the stored refresh token: %w", err)
	}
	return tok, nil
}

// Save stores a rotated refresh token.
func (t *TokenStore) Save(ctx context.Context, refreshToken string) error {
	_, err := t.store.pool.Exec(ctx, `INSERT INTO `+t.store.q+`.oauth_tokens (token_key, refresh_token) VALUES ($1, $2)
		ON CONFLICT (token_key) DO UPDATE SET refresh_token = EXCLUDED.refresh_token, updated_at = now()`, t.key, refreshToken)
	if err != nil {
		return fmt.Errorf("saving the rotated refresh token: %w", err)
	}
	return nil
}

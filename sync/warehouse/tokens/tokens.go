// Package tokens keeps a deployment's OAuth credential in its warehouse
// schema (oauth_tokens): the rotated refresh token, so it survives restarts
// and every replica shares it, and the current access token with its expiry.
// Its statements are in sql/tokens.sql.
package tokens

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the statements of sql/tokens.sql, rendered for a schema.
type statements struct {
	load, save, saveGrant, info string
}

func newStatements(schemaName string) (statements, error) {
	var q statements
	st, err := sqlfile.Load(sqlFiles, "tokens", map[string]string{"schema": schema.QuoteIdentifier(schemaName)})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("tokens", st, map[string]*string{"load": &q.load, "save": &q.save,
		"saveGrant": &q.saveGrant, "info": &q.info})
}

// Store keeps one credential: the key is a digest of the token URL and the
// client id, never the secret.
type Store struct {
	pool *pgxpool.Pool
	key  string
	sql  statements
}

// New returns the store of the credential (tokenURL, clientID) in the
// warehouse schema schemaName.
func New(pool *pgxpool.Pool, schemaName, tokenURL, clientID string) (*Store, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return nil, err
	}
	q, err := newStatements(schemaName)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(tokenURL + "\x00" + clientID))
	return &Store{pool: pool, key: hex.EncodeToString(sum[:]), sql: q}, nil
}

// Load returns the stored refresh token, or "" when none is stored.
func (t *Store) Load(ctx context.Context) (string, error) {
	var tok string
	err := t.pool.QueryRow(ctx, t.sql.load, t.key).Scan(&tok)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("loading the stored refresh token: %w", err)
	}
	return tok, nil
}

// Save stores a rotated refresh token.
func (t *Store) Save(ctx context.Context, refreshToken string) error {
	if _, err := t.pool.Exec(ctx, t.sql.save, t.key, refreshToken); err != nil {
		return fmt.Errorf("saving the rotated refresh token: %w", err)
	}
	return nil
}

// SaveGrant stores the refresh token, the access token and when it expires
// (zero: unknown).
func (t *Store) SaveGrant(ctx context.Context, refreshToken, accessToken string, expiresAt time.Time) error {
	var exp *time.Time
	if !expiresAt.IsZero() {
		exp = &expiresAt
	}
	var access *string
	if accessToken != "" {
		access = &accessToken
	}
	if _, err := t.pool.Exec(ctx, t.sql.saveGrant, t.key, refreshToken, access, exp); err != nil {
		return fmt.Errorf("saving the OAuth tokens: %w", err)
	}
	return nil
}

// Info describes a stored OAuth credential without its tokens.
type Info struct {
	// Stored reports whether a refresh token is stored.
	Stored bool `json:"stored"`
	// AccessExpiresAt is when the stored access token expires; nil when
	// none is stored or its expiry is unknown.
	AccessExpiresAt *time.Time `json:"access_token_expires_at"`
	// RotatedAt is when the refresh token was stored or last rotated.
	RotatedAt *time.Time `json:"refresh_token_rotated_at"`
}

// Info describes the stored credential; it never reads the tokens.
func (t *Store) Info(ctx context.Context) (Info, error) {
	var info Info
	var rotated time.Time
	err := t.pool.QueryRow(ctx, t.sql.info, t.key).Scan(&info.AccessExpiresAt, &rotated)
	if errors.Is(err, pgx.ErrNoRows) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("reading the stored OAuth credential: %w", err)
	}
	info.Stored, info.RotatedAt = true, &rotated
	return info, nil
}

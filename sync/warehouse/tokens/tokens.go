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
	"github.com/usersync/usersync/sync/secret"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the statements of sql/tokens.sql, rendered for a schema.
type statements struct {
	load, save, saveGrant, saveFailure, info, all, reseal string
}

func newStatements(schemaName string) (statements, error) {
	var q statements
	st, err := sqlfile.Load(sqlFiles, "tokens", map[string]string{"schema": schema.QuoteIdentifier(schemaName)})
	if err != nil {
		return q, err
	}
	return q, sqlfile.Assign("tokens", st, map[string]*string{"load": &q.load, "save": &q.save,
		"saveGrant": &q.saveGrant, "saveFailure": &q.saveFailure, "info": &q.info, "all": &q.all, "reseal": &q.reseal})
}

// Store keeps one credential: the key is a digest of the token URL and the
// client id, never the secret.
type Store struct {
	pool   *pgxpool.Pool
	key    string
	schema string
	sql    statements
	// seal, when set, seals the tokens saved and opens those loaded.
	seal *secret.Key
}

// ErrNoKey is a stored token that is sealed while the store has no key.
var ErrNoKey = errors.New("the stored OAuth tokens are encrypted; set USERSYNC_SECRETS_KEY_FILE (or USERSYNC_SECRETS_KEY)")

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
	return &Store{pool: pool, key: hex.EncodeToString(sum[:]), schema: schemaName, sql: q}, nil
}

// WithKey makes the store seal the tokens it saves with k and open sealed
// ones with it; nil keeps them in plain text, as before keys.
func (t *Store) WithKey(k *secret.Key) *Store {
	t.seal = k
	return t
}

// bound is where a token of column col of row tokenKey is stored, the
// additional data of its seal.
func bound(schemaName, tokenKey, col string) string {
	return secret.Bind("oauth_tokens", schemaName, tokenKey, col)
}

// sealedRefresh is refreshToken as stored: the stored value itself when it
// is the same token, since each seal differs and saveGrant tells a rotation
// by a changed value.
func (t *Store) sealedRefresh(ctx context.Context, refreshToken string) (string, error) {
	if t.seal != nil {
		var stored string
		err := t.pool.QueryRow(ctx, t.sql.load, t.key).Scan(&stored)
		if err == nil && secret.IsSealed(stored) {
			if p, err := t.seal.Open(bound(t.schema, t.key, "refresh_token"), stored); err == nil && p == refreshToken {
				return stored, nil
			}
		}
	}
	return t.sealed("refresh_token", refreshToken)
}

// sealed is v as stored: sealed when the store has a key.
func (t *Store) sealed(col, v string) (string, error) {
	if t.seal == nil || v == "" {
		return v, nil
	}
	s, err := t.seal.Seal(bound(t.schema, t.key, col), v)
	if err != nil {
		return "", fmt.Errorf("sealing the OAuth %s: %w", col, err)
	}
	return s, nil
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
	if !secret.IsSealed(tok) {
		return tok, nil
	}
	if t.seal == nil {
		return "", ErrNoKey
	}
	plain, err := t.seal.Open(bound(t.schema, t.key, "refresh_token"), tok)
	if err != nil {
		return "", fmt.Errorf("opening the stored refresh token: %w", keyNamed(err))
	}
	return plain, nil
}

// keyNamed names the setting in a wrong key's error.
func keyNamed(err error) error {
	var wk *secret.WrongKeyError
	if errors.As(err, &wk) {
		return fmt.Errorf("it is sealed with key id %s, USERSYNC_SECRETS_KEY is key id %s", wk.Sealed, wk.Have)
	}
	return err
}

// Save stores a rotated refresh token.
func (t *Store) Save(ctx context.Context, refreshToken string) error {
	rt, err := t.sealed("refresh_token", refreshToken)
	if err != nil {
		return err
	}
	if _, err := t.pool.Exec(ctx, t.sql.save, t.key, rt); err != nil {
		return fmt.Errorf("saving the rotated refresh token: %w", err)
	}
	return nil
}

// SaveGrant stores the refresh token, the access token, when it expires
// (zero: unknown) and the scope the grant holds ("": keep the stored one),
// and clears the last refresh failure.
func (t *Store) SaveGrant(ctx context.Context, refreshToken, accessToken string, expiresAt time.Time, scope string) error {
	var exp *time.Time
	if !expiresAt.IsZero() {
		exp = &expiresAt
	}
	rt, err := t.sealedRefresh(ctx, refreshToken)
	if err != nil {
		return err
	}
	at, err := t.sealed("access_token", accessToken)
	if err != nil {
		return err
	}
	if _, err := t.pool.Exec(ctx, t.sql.saveGrant, t.key, rt, nullable(at), exp, nullable(scope)); err != nil {
		return fmt.Errorf("saving the OAuth tokens: %w", err)
	}
	return nil
}

// SaveRefreshFailure records a refresh that failed: the OAuth error code of
// a refusal ("" when the token endpoint did not answer) and the error, which
// holds no secret. A credential that is not stored gets no record.
func (t *Store) SaveRefreshFailure(ctx context.Context, code, message string) error {
	if _, err := t.pool.Exec(ctx, t.sql.saveFailure, t.key, code, message); err != nil {
		return fmt.Errorf("recording the failed OAuth refresh: %w", err)
	}
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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
	// Scope is the scope the grant holds as the token endpoint last said;
	// "" when it never said.
	Scope string `json:"scope"`
	// RefreshFailure is the last refresh that failed since the last one
	// (or login) that succeeded; nil when there is none.
	RefreshFailure *RefreshFailure `json:"last_refresh_failure"`
}

// RefreshFailure is a refresh that failed.
type RefreshFailure struct {
	// At is when it failed.
	At time.Time `json:"at"`
	// Code is the OAuth error code of a refusal ("invalid_grant"); "" when
	// the token endpoint did not answer.
	Code string `json:"code"`
	// Error is the error, on one line, without secrets.
	Error string `json:"error"`
}

// Info describes the stored credential; it never reads the tokens.
func (t *Store) Info(ctx context.Context) (Info, error) {
	var info Info
	var rotated time.Time
	var scope *string
	var failedAt *time.Time
	var f RefreshFailure
	err := t.pool.QueryRow(ctx, t.sql.info, t.key).Scan(&info.AccessExpiresAt, &rotated, &scope, &failedAt, &f.Code, &f.Error)
	if errors.Is(err, pgx.ErrNoRows) {
		return Info{}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("reading the stored OAuth credential: %w", err)
	}
	info.Stored, info.RotatedAt = true, &rotated
	if scope != nil {
		info.Scope = *scope
	}
	if failedAt != nil {
		f.At = *failedAt
		info.RefreshFailure = &f
	}
	return info, nil
}

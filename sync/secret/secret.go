package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// prefix starts every sealed value: a stored value without it is a legacy
// plain-text one.
const prefix = "usersync-sealed:v1:"

// KeySize is the size of a key, in bytes.
const KeySize = 32

// Errors of Open; a wrong key is a *WrongKeyError.
var (
	// ErrMalformed is a value that starts like a sealed one but is not.
	ErrMalformed = errors.New("the sealed value is malformed")
	// ErrNotOpened is a value sealed with this key that does not open:
	// it was altered, or moved from another row or setting.
	ErrNotOpened = errors.New("the sealed value does not open with its key (altered, or copied from another row or setting)")
)

// WrongKeyError is a value sealed with another key than the one given.
type WrongKeyError struct {
	Sealed, Have string // key ids
}

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("sealed with key id %s, the key given is key id %s", e.Sealed, e.Have)
}

// Key is a sealing key.
type Key struct {
	id   string
	aead cipher.AEAD
}

// ParseKey reads a key written as 64 hex digits (openssl rand -hex 32) or
// as the standard base64 of 32 bytes (openssl rand -base64 32). Its errors
// never hold the value.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	raw, err := hex.DecodeString(s)
	if err != nil || len(raw) != KeySize {
		raw, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil || len(raw) != KeySize {
		return nil, errors.New("must be 32 bytes written as 64 hex digits (openssl rand -hex 32) or in base64")
	}
	return NewKey(raw)
}

// NewKey returns the key of 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("a key is %d bytes, not %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("making the cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("making the cipher: %w", err)
	}
	sum := sha256.Sum256(append([]byte("usersync secrets key id\x00"), raw...))
	return &Key{id: hex.EncodeToString(sum[:6]), aead: aead}, nil
}

// ID names the key without revealing it: 12 hex digits of a digest.
func (k *Key) ID() string { return k.id }

// Bind is the additional data of a value stored at the place its parts
// name (account and setting; schema, row and column): a sealed value opens
// only with the same parts.
func Bind(parts ...string) string { return strings.Join(parts, "\x00") }

// Seal encrypts plain for the place bound names.
func (k *Key) Seal(bound, plain string) (string, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("reading a nonce: %w", err)
	}
	ct := k.aead.Seal(nonce, nonce, []byte(plain), k.additional(bound))
	return prefix + k.id + ":" + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Open decrypts a value Seal returned for the same place.
func (k *Key) Open(bound, sealed string) (string, error) {
	id, body, err := split(sealed)
	if err != nil {
		return "", err
	}
	if id != k.id {
		return "", &WrongKeyError{Sealed: id, Have: k.id}
	}
	ct, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(ct) < k.aead.NonceSize()+k.aead.Overhead() {
		return "", ErrMalformed
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, ct[:n], ct[n:], k.additional(bound))
	if err != nil {
		return "", ErrNotOpened
	}
	return string(plain), nil
}

// additional binds the key id too, so a value whose id was edited does not
// open under the key that sealed it.
func (k *Key) additional(bound string) []byte {
	return []byte(prefix + k.id + "\x00" + bound)
}

// IsSealed says whether a stored value is sealed (else it is plain text,
// as an earlier release stored it).
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// KeyID is the id of the key that sealed v; ok is false for a value that
// is not sealed.
func KeyID(v string) (id string, ok bool) {
	id, _, err := split(v)
	return id, err == nil
}

func split(v string) (id, body string, err error) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return "", "", ErrMalformed
	}
	id, body, ok = strings.Cut(rest, ":")
	if !ok || id == "" || body == "" {
		return "", "", ErrMalformed
	}
	return id, body, nil
}

// Ring opens values sealed with any of its keys and seals with the first:
// the current key, then the one being retired during a rotation.
type Ring []*Key

// Open opens v with the key of its id; a value that is not sealed is
// returned as it is (plain is true).
func (r Ring) Open(bound, v string) (plain string, wasPlain bool, err error) {
	if !IsSealed(v) {
		return v, true, nil
	}
	id, _, err := split(v)
	if err != nil {
		return "", false, err
	}
	for _, k := range r {
		if k != nil && k.id == id {
			p, err := k.Open(bound, v)
			return p, false, err
		}
	}
	have := ""
	if len(r) > 0 && r[0] != nil {
		have = r[0].id
	}
	return "", false, &WrongKeyError{Sealed: id, Have: have}
}

package secret

import (
	"errors"
	"strings"
	"testing"
)

const (
	hexKey   = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	otherKey = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func mustKey(t *testing.T, s string) *Key {
	t.Helper()
	k, err := ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSealOpen: a sealed value holds neither the plain text nor the key,
// names its key id, opens with its key at its place only, and each seal
// differs (a fresh nonce).
func TestSealOpen(t *testing.T) {
	t.Parallel()
	k := mustKey(t, hexKey)
	at := Bind("eu", "USERSYNC_API_TOKEN")
	s1, err := k.Seal(at, "token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := k.Seal(at, "token-0123456789")
	if s1 == s2 || strings.Contains(s1, "token-0123456789") || strings.Contains(s1, hexKey) || !IsSealed(s1) {
		t.Errorf("sealed: %s %s", s1, s2)
	}
	if id, ok := KeyID(s1); !ok || id != k.ID() || len(id) != 12 {
		t.Errorf("KeyID = %q %v, want %q", id, ok, k.ID())
	}
	if p, err := k.Open(at, s1); err != nil || p != "token-0123456789" {
		t.Errorf("Open = %q %v", p, err)
	}
	for _, elsewhere := range []string{Bind("us", "USERSYNC_API_TOKEN"), Bind("eu", "USERSYNC_OAUTH_CLIENT_SECRET"), "eu"} {
		if _, err := k.Open(elsewhere, s1); !errors.Is(err, ErrNotOpened) {
			t.Errorf("opened at %q: %v", elsewhere, err)
		}
	}
	tampered := s1[:len(s1)-2] + "AA"
	if _, err := k.Open(at, tampered); !errors.Is(err, ErrNotOpened) && !errors.Is(err, ErrMalformed) {
		t.Errorf("a tampered value: %v", err)
	}
}

// TestWrongKey: a value opened with another key says both key ids, and a
// Ring opens with the key of the value's id and passes plain text through.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	k, o := mustKey(t, hexKey), mustKey(t, otherKey)
	s, _ := k.Seal("x", "v")
	_, err := o.Open("x", s)
	var wk *WrongKeyError
	if !errors.As(err, &wk) || wk.Sealed != k.ID() || wk.Have != o.ID() || !strings.Contains(err.Error(), k.ID()) {
		t.Fatalf("wrong key: %v", err)
	}
	if p, plain, err := (Ring{o, k}).Open("x", s); err != nil || plain || p != "v" {
		t.Errorf("ring: %q %v %v", p, plain, err)
	}
	if _, _, err := (Ring{o}).Open("x", s); !errors.As(err, &wk) {
		t.Errorf("ring without the key: %v", err)
	}
	if p, plain, err := (Ring{o}).Open("x", "legacy"); err != nil || !plain || p != "legacy" {
		t.Errorf("ring, plain: %q %v %v", p, plain, err)
	}
}

// TestParseKey: hex and base64 of 32 bytes are the same key; anything else
// is refused without quoting it.
func TestParseKey(t *testing.T) {
	t.Parallel()
	b64 := "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8="
	if mustKey(t, b64).ID() != mustKey(t, hexKey).ID() {
		t.Error("base64 and hex of one key differ")
	}
	for _, bad := range []string{"", "short-secret-value", hexKey[:62], hexKey + "00"} {
		if _, err := ParseKey(bad); err == nil || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("ParseKey(%q) = %v", bad, err)
		}
	}
}

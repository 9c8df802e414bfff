package tokens

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/secret"
)

// TestSealedTokens: with a key both tokens are stored sealed and read back;
// a refresh that did not rotate keeps the rotation time; without the key, or
// with another, Load says so; a plain-text token stored before keys still
// reads; Rekey seals every token with the new key, after which only it opens
// them.
func TestSealedTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	name := migratedSchema(t, pool)
	k1, _ := secret.ParseKey(strings.Repeat("a1", 32))
	k2, _ := secret.ParseKey(strings.Repeat("b2", 32))
	open := func(k *secret.Key) *Store {
		s, err := New(pool, name, "https://api.example.com/oauth/token", "cid")
		if err != nil {
			t.Fatal(err)
		}
		return s.WithKey(k)
	}
	stored := func() (rt, at string) {
		if err := pool.QueryRow(ctx, `SELECT refresh_token, coalesce(access_token, '') FROM "`+name+`".oauth_tokens`).Scan(&rt, &at); err != nil {
			t.Fatal(err)
		}
		return rt, at
	}
	// A plain-text token of an earlier release reads with or without a key.
	if err := open(nil).Save(ctx, "rt-plain"); err != nil {
		t.Fatal(err)
	}
	if rt, err := open(k1).Load(ctx); err != nil || rt != "rt-plain" {
		t.Fatalf("legacy token: %q %v", rt, err)
	}
	ts := open(k1)
	if err := ts.SaveGrant(ctx, "rt-SECRET-1", "at-SECRET-1", time.Now().Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	rt, at := stored()
	if !secret.IsSealed(rt) || !secret.IsSealed(at) || strings.Contains(rt+at, "SECRET") {
		t.Fatalf("stored in clear: %s %s", rt, at)
	}
	if got, err := ts.Load(ctx); err != nil || got != "rt-SECRET-1" {
		t.Errorf("Load = %q %v", got, err)
	}
	before, _ := ts.Info(ctx)
	if err := ts.SaveGrant(ctx, "rt-SECRET-1", "at-SECRET-2", time.Now().Add(2*time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	if after, _ := ts.Info(ctx); !after.RotatedAt.Equal(*before.RotatedAt) {
		t.Errorf("a refresh that did not rotate moved the rotation time: %v -> %v", before.RotatedAt, after.RotatedAt)
	}
	if _, err := open(nil).Load(ctx); !errors.Is(err, ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := open(k2).Load(ctx); err == nil || !strings.Contains(err.Error(), "sealed with key id "+k1.ID()+", USERSYNC_SECRETS_KEY is key id "+k2.ID()) {
		t.Errorf("wrong key: %v", err)
	}
	if n, err := Rekey(ctx, pool, name, secret.Ring{k2, k1}); err != nil || n != 1 {
		t.Fatalf("Rekey = %d %v", n, err)
	}
	if _, err := open(k1).Load(ctx); err == nil {
		t.Error("the old key still opens the token after Rekey")
	}
	if got, err := open(k2).Load(ctx); err != nil || got != "rt-SECRET-1" {
		t.Errorf("after Rekey: %q %v", got, err)
	}
	if rt, at := stored(); strings.Contains(rt+at, "SECRET") || !secret.IsSealed(at) {
		t.Errorf("after Rekey, in clear: %s %s", rt, at)
	}
}

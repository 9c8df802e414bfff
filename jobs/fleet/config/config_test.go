package config

import (
	"testing"
	"time"
)

// TestEverySettingHasAScope: every setting says whether an account sets it,
// and the account-scoped ones are the ones the settings reference marks so.
func TestEverySettingHasAScope(t *testing.T) {
	t.Parallel()
	for _, s := range Settings() {
		if s.Scope == ScopeUnset {
			t.Errorf("%s has no scope: say PerAccount or FleetWide in the settings table", s.Env)
		}
	}
	for _, env := range []string{"USERSYNC_API_URL", "USERSYNC_API_TOKEN", "USERSYNC_OAUTH_CLIENT_SECRET", "USERSYNC_SCHEMA", "USERSYNC_SYNC_SCHEDULE", "USERSYNC_PII_KEY"} {
		if s, _ := ByEnv(env); s.Scope != PerAccount {
			t.Errorf("%s is not per account", env)
		}
	}
	for _, env := range []string{"DATABASE_URL", "USERSYNC_WORKERS", "USERSYNC_HTTP_TOKEN", "USERSYNC_S3_SECRET_ACCESS_KEY", "USERSYNC_SCHEDULE_MIN_INTERVAL"} {
		if s, _ := ByEnv(env); s.Scope != FleetWide {
			t.Errorf("%s is not fleet-wide", env)
		}
	}
}

// TestAuthorizeURL: the authorize URL is the setting, or the token URL with
// authorize for its last path segment; the scopes are normalized.
func TestAuthorizeURL(t *testing.T) {
	t.Parallel()
	for token, want := range map[string]string{
		"https://api.example.com/oauth/token":         "https://api.example.com/oauth/authorize",
		"https://api.example.com/oauth/token/":        "https://api.example.com/oauth/authorize",
		"https://login.example.com/connect/token?x=1": "https://login.example.com/connect/authorize",
		"https://api.example.com/token":               "https://api.example.com/authorize",
		"http://127.0.0.1:8080/oauth/v2/access_token": "http://127.0.0.1:8080/oauth/v2/authorize",
		"https://api.example.com":                     "https://api.example.com/authorize",
	} {
		cfg, err := Load(lookupMap(map[string]string{"USERSYNC_OAUTH_TOKEN_URL": token}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.AuthorizeURL(); got != want {
			t.Errorf("token URL %s: authorize URL %s, want %s", token, got, want)
		}
	}
	cfg, _ := Load(lookupMap(map[string]string{"USERSYNC_OAUTH_TOKEN_URL": "https://a.example.com/oauth/token",
		"USERSYNC_OAUTH_AUTHORIZE_URL": "https://b.example.com/authorize", "USERSYNC_OAUTH_SCOPES": "  users.read\tteams.read "}), nil)
	if cfg.AuthorizeURL() != "https://b.example.com/authorize" || cfg.OAuthScopes != "users.read teams.read" {
		t.Errorf("authorize URL %s, scopes %q", cfg.AuthorizeURL(), cfg.OAuthScopes)
	}
	if cfg, _ := Load(lookupMap(nil), nil); cfg.OAuthScopes != "users.read teams.read roles.read profiles.read" {
		t.Errorf("default scopes %q", cfg.OAuthScopes)
	}
}

// TestParseSlotTime: USERSYNC_SLOT_TIME is 0 (off) or a second to a day.
func TestParseSlotTime(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]time.Duration{"0": 0, "0s": 0, "1s": time.Second, "30s": 30 * time.Second, "24h": 24 * time.Hour} {
		var d time.Duration
		if err := parseSlotTime(&d, v); err != nil || d != want {
			t.Errorf("%q: %s, %v; want %s", v, d, err, want)
		}
	}
	for _, v := range []string{"999ms", "-1s", "25h", "soon", ""} {
		var d time.Duration
		if err := parseSlotTime(&d, v); err == nil {
			t.Errorf("%q: parsed as %s; want an error", v, d)
		}
	}
}

package config

import (
	"strings"
	"testing"
)

// FuzzLoadConfig feeds arbitrary values to every setting: loading never
// panics, an error is one line that names a setting, and no secret value
// ever appears in it.
func FuzzLoadConfig(f *testing.F) {
	f.Add("usersync", "1000", "10m", "*/15 * * * *", "127.0.0.1:9090", "tok-SECRET-1")
	f.Add("Bad-Name", "0", "-1m", "61 * * * *", "nonsense", "tok\nSECRET")
	f.Add("", "99999999999999999999", "1h30m", "@every 1s", "off", "")
	f.Add("pg_x", "1e3", "ten", "CRON_TZ=Nowhere/City 0 3 * * *", ":0", "a\x00b")
	f.Fuzz(func(t *testing.T, schemaName, pageSize, lookback, schedule, addr, secret string) {
		env := map[string]string{
			"USERSYNC_SCHEMA": schemaName, "USERSYNC_PAGE_SIZE": pageSize, "USERSYNC_LOOKBACK": lookback,
			"USERSYNC_SYNC_SCHEDULE": schedule, "USERSYNC_HTTP_ADDR": addr, "USERSYNC_API_TOKEN": secret,
			"USERSYNC_OAUTH_CLIENT_SECRET": secret, "USERSYNC_HTTP_BASIC_AUTH": secret,
		}
		_, err := Load(lookupMap(env), nil)
		if err == nil {
			return
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") && !strings.Contains(schemaName+pageSize+lookback+schedule+addr, "\n") {
			t.Fatalf("multi-line error: %q", msg)
		}
		named := false
		for _, n := range EnvNames() {
			if strings.Contains(msg, n) {
				named = true
			}
		}
		if !named {
			t.Fatalf("error names no setting: %q", msg)
		}
		if len(secret) >= 4 && strings.Contains(msg, secret) {
			t.Fatalf("error echoes a secret: %q", msg)
		}
	})
}

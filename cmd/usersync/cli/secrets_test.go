package cli

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// TestNoSecretAnywhere runs syncs, a failing sync, status and a worker with
// distinctive OAuth secrets and a password in DATABASE_URL's query, at debug
// level, and greps everything they produce: logs, errors, summaries, status,
// metrics, job arguments and the warehouse's run records.
func TestNoSecretAnywhere(t *testing.T) {
	t.Parallel()
	const (
		clientSecret = "CLIENTSECRET-q8Zr"
		refresh      = "REFRESHTOKEN-w3Kp"
		uiToken      = "UITOKEN-m4Jd-0123456789"
		piiKey       = "PIIKEY-r7Tq-0123456789abcdefghijklmn"
	)
	c := newCLIEnv(t, apisim.Options{Seed: 31, Users: 400, RefreshToken: refresh, ClientID: "cid", ClientSecret: clientSecret,
		TokenTTL: 2 * time.Second})
	env := workerEnv(c, map[string]string{
		"USERSYNC_OAUTH_TOKEN_URL": c.srv.URL + "/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "cid",
		"USERSYNC_OAUTH_CLIENT_SECRET": clientSecret, "USERSYNC_OAUTH_REFRESH_TOKEN": refresh,
		"USERSYNC_API_TOKEN": "", "USERSYNC_LOG_LEVEL": "debug", "USERSYNC_HTTP_TOKEN": uiToken,
		"USERSYNC_PII_HASH": "email", "USERSYNC_PII_KEY": piiKey,
	})
	var everything strings.Builder
	record := func(args ...string) int {
		code, out, errs := run(t, env, args...)
		everything.WriteString(out + errs)
		return code
	}
	if code := record("sync", "--full"); code != ExitOK {
		t.Fatalf("sync: %s", everything.String())
	}
	c.sim.ExpireTokens()
	c.sim.UpdateUsers(5)
	record("sync", "--json")
	record("status")
	record("status", "--json")
	record("pii", "apply")
	record("forget", "--user", "1")
	record("backfill", "--since", "2020-01-01")
	record("help")
	record("sync", "--api-url", "http://api.invalid:1") // fails: not loopback over http
	// A worker with the UI guarded, scraped once.
	addr := freeAddr(t)
	wenv := map[string]string{}
	for k, v := range env {
		wenv[k] = v
	}
	wenv["USERSYNC_HTTP_ADDR"] = addr
	wenv["USERSYNC_SYNC_SCHEDULE"] = "@every 1s"
	wenv["USERSYNC_SCHEDULE_MIN_INTERVAL"] = "1s"
	w := startWorker(t, wenv)
	waitFor(t, "a worker sync", 30*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded' AND job_id IS NOT NULL`) >= 2
	})
	_, metrics := get(t, "http://"+addr+"/metrics", "")
	everything.WriteString(metrics)
	w.stop(t)
	everything.WriteString(w.logs.String())
	rows, err := c.store.Pool().Query(context.Background(), fmt.Sprintf(`SELECT coalesce(error, '') || summary::text || coalesce(next_url, '') FROM %q.sync_runs
		UNION ALL SELECT args::text || coalesce(errors::text, '') FROM %q.river_job
		UNION ALL SELECT fingerprint || coalesce(key_id, '') FROM %[1]q.pii_policies`, c.store.Schema(), c.store.Schema()+"_river"))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		everything.WriteString(s)
	}
	all := everything.String()
	if !strings.Contains(all, "oauth token refreshed") {
		t.Error("the debug logs were not captured (no refresh logged)")
	}
	for _, secret := range []string{clientSecret, refresh, uiToken, piiKey, "PIIKEY-", c.sim.RefreshToken(), "Bearer "} {
		if strings.Contains(all, secret) {
			i := strings.Index(all, secret)
			t.Errorf("a secret appears in the output: …%s…", all[max(0, i-80):min(len(all), i+40)])
		}
	}
}

// TestNoSecretInAuthLogin runs auth login (a forged state, a grant, a denial), auth
// status and a sync at debug level and greps everything
// they print for the client secret, the codes and states issued, and the
// stored refresh and access tokens.
func TestNoSecretInAuthLogin(t *testing.T) {
	t.Parallel()
	a := newAuthEnv(t, apisim.Options{Seed: 44, Users: 100}, map[string]string{"USERSYNC_LOG_LEVEL": "debug"})
	var everything strings.Builder
	record := func(args ...string) int {
		code, out, errs := run(t, a.oauth, args...)
		everything.WriteString(out + errs)
		return code
	}
	login := []string{"auth", "login", "--follow-redirect", "--redirect-port", "0"}
	a.tamper.setEdit(func(loc *url.URL) {
		q := loc.Query()
		q.Set("state", q.Get("state")+"x")
		loc.RawQuery = q.Encode()
	})
	record(append(login, "--timeout", "2s")...) // the callback is ignored: the login times out
	a.tamper.setEdit(nil)
	if code := record(login...); code != ExitOK {
		t.Fatalf("auth login: %s", everything.String())
	}
	record("auth", "status")
	record("auth", "status", "--json")
	if code := record("sync", "--full"); code != ExitOK {
		t.Fatalf("sync: %s", everything.String())
	}
	if err := a.sim.UpdateKnobs(func(k *apisim.Knobs) { k.DenyConsent = true }); err != nil {
		t.Fatal(err)
	}
	record(login...)
	all := everything.String()
	if !strings.Contains(all, "oauth authorization code exchanged") {
		t.Error("the debug logs were not captured")
	}
	secrets := append(a.tamper.issued(), "auth-test-secret", a.sim.RefreshToken(), accessToken(t, a.cliEnv), "Bearer ")
	if len(secrets) < 7 {
		t.Fatalf("too few codes and states recorded: %d", len(secrets))
	}
	for _, secret := range secrets {
		if strings.Contains(all, secret) {
			i := strings.Index(all, secret)
			t.Errorf("a secret appears in the output: …%s…", all[max(0, i-80):min(len(all), i+40)])
		}
	}
}

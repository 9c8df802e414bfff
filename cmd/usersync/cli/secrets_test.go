package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/jsonapi/apisim"
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
		uiToken      = "UITOKEN-m4Jd"
	)
	c := newCLIEnv(t, apisim.Options{Seed: 31, Users: 400, RefreshToken: refresh, ClientID: "cid", ClientSecret: clientSecret,
		TokenTTL: 2 * time.Second})
	env := workerEnv(c, map[string]string{
		"USERSYNC_OAUTH_TOKEN_URL": c.srv.URL + "/oauth/token", "USERSYNC_OAUTH_CLIENT_ID": "cid",
		"USERSYNC_OAUTH_CLIENT_SECRET": clientSecret, "USERSYNC_OAUTH_REFRESH_TOKEN": refresh,
		"USERSYNC_API_TOKEN": "", "USERSYNC_LOG_LEVEL": "debug", "USERSYNC_HTTP_TOKEN": uiToken,
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
		UNION ALL SELECT args::text || coalesce(errors::text, '') FROM %q.river_job`, c.store.Schema(), c.store.Schema()+"_river"))
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
	for _, secret := range []string{clientSecret, refresh, uiToken, c.sim.RefreshToken(), "Bearer "} {
		if strings.Contains(all, secret) {
			i := strings.Index(all, secret)
			t.Errorf("a secret appears in the output: …%s…", all[max(0, i-80):min(len(all), i+40)])
		}
	}
}

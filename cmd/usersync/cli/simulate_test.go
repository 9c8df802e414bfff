package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer/syncertest"
	"github.com/usersync/usersync/sync/warehouse"
)

// startSimulate runs `usersync simulate` as a process with args, waits for
// it to listen, and returns its URL.
func startSimulate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"simulate", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var rec map[string]any
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec["msg"] == "simulated API listening" {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			url, _ := rec["url"].(string)
			return url
		}
	}
	t.Fatal("simulate did not log its address")
	return ""
}

func readAccountsFile(t *testing.T, path string) []apisim.AccountLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []apisim.AccountLine
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var a apisim.AccountLine
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("accounts file line %s: %v", line, err)
		}
		out = append(out, a)
	}
	return out
}

func getStatus(t *testing.T, u, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestSimulateServesAccounts starts `usersync simulate --accounts 4` with
// a large, an OAuth, a revoked and a fault account, reads the accounts file
// and checks each account over HTTP: its own users, its own token only,
// its revocation and faults kept to itself.
func TestSimulateServesAccounts(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "accounts.jsonl")
	url := startSimulate(t, "--users", "7", "--accounts", "4", "--account-users", "20", "--large-accounts", "1",
		"--large-users", "60", "--oauth-accounts", "1", "--revoked-accounts", "1", "--fault-accounts", "1",
		"--fault-rate", "1", "--accounts-file", file)
	accts := readAccountsFile(t, file)
	if len(accts) != 4 || accts[0].Name != "acct_001" || accts[3].Name != "acct_004" {
		t.Fatalf("accounts file: %+v", accts)
	}
	large, oauth, revoked, faulty := accts[0], accts[1], accts[2], accts[3]
	if large.Users != 60 || large.APIURL != url+"/accounts/acct_001" || large.Token == "" ||
		oauth.Token != "" || oauth.OAuthTokenURL != oauth.APIURL+"/oauth/token" || oauth.OAuthRefreshToken == "" ||
		!revoked.Revoked || !faulty.Faults || faulty.Users != 20 {
		t.Errorf("accounts file: %+v", accts)
	}
	users := func(a apisim.AccountLine, token string) int {
		return getStatus(t, a.APIURL+"/api/v2/users?count=true", token)
	}
	if st := users(large, large.Token); st != http.StatusOK {
		t.Errorf("acct_001 with its token: %d", st)
	}
	for _, c := range []struct {
		name  string
		a     apisim.AccountLine
		token string
		want  int
	}{
		{"acct_001 with acct_004's token", large, faulty.Token, 401},
		{"acct_004 with acct_001's token", faulty, large.Token, 401},
		{"acct_003, revoked", revoked, revoked.Token, 401},
		{"acct_004, --fault-rate 1", faulty, faulty.Token, 0},
		{"acct_002 (OAuth) with a static token", oauth, large.Token, 401},
	} {
		if st := users(c.a, c.token); c.want != 0 && st != c.want || c.want == 0 && st < 500 {
			t.Errorf("%s: %d, want %d (0: a 5xx)", c.name, st, c.want)
		}
	}
	// The unprefixed default dataset takes every knob, as without --accounts.
	if st := getStatus(t, url+"/api/v2/users", "anything"); st < 500 {
		t.Errorf("the default dataset, unprefixed, with --fault-rate 1: %d, want a 5xx", st)
	}
	if code, _, errs := run(t, nil, "simulate", "--accounts", "2", "--fault-accounts", "2", "--revoked-accounts", "1"); code != ExitUsage ||
		!strings.Contains(errs, "--revoked-accounts must be between 0 and --accounts minus --fault-accounts (0)") {
		t.Errorf("too many revoked accounts: exit %d: %s", code, errs)
	}
}

// TestSimulatedAccountsSyncApart syncs two accounts of the command's fleet
// (a static-token one and an OAuth one) into two schemas with the settings
// the accounts file gives: each warehouse mirrors its own account only.
func TestSimulatedAccountsSyncApart(t *testing.T) {
	t.Parallel()
	ff := apisim.FleetLayout{Accounts: 3, Users: 150, Large: 0, LargeUsers: 1, OAuth: 1, Faults: 1}
	o := apisim.Options{Seed: 9, Users: 10, Knobs: apisim.Knobs{RateLimit: 10_000, FailEvery: 3}}
	fo := ff.FleetOptions(o)
	fleet := apisim.NewFleet(fo)
	srv := httptest.NewServer(fleet)
	t.Cleanup(srv.Close)
	accts := ff.AccountLines(srv.URL, fo, fleet)
	pool := schematest.NewPool(t, 4)
	for _, a := range accts {
		name := schematest.NewSchemaName(t, pool)
		env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
			"USERSYNC_API_URL": a.APIURL, "USERSYNC_API_TOKEN": a.Token, "USERSYNC_OAUTH_TOKEN_URL": a.OAuthTokenURL,
			"USERSYNC_OAUTH_CLIENT_ID": a.OAuthClientID, "USERSYNC_OAUTH_CLIENT_SECRET": a.OAuthClientSecret,
			"USERSYNC_OAUTH_REFRESH_TOKEN": a.OAuthRefreshToken}
		if code, _, errs := run(t, env, "migrate"); code != ExitOK {
			t.Fatalf("migrate %s: %s", a.Name, errs)
		}
		if code, _, errs := run(t, env, "sync", "--full"); code != ExitOK {
			t.Fatalf("sync %s: exit %d: %s", a.Name, code, errs)
		}
		store, err := warehouse.NewStore(pool, name)
		if err != nil {
			t.Fatal(err)
		}
		syncertest.AssertMirrors(t, fleet.Account(a.Name), store)
	}
	if st := fleet.Account("acct_003").Stats(); st.Faults == 0 {
		t.Error("the fault account (FailEvery 3) saw no fault: its sync proved nothing")
	}
	for _, name := range []string{"acct_001", "acct_002"} {
		if st := fleet.Account(name).Stats(); st.Faults != 0 {
			t.Errorf("%s saw %d faults: the fault knobs leaked out of acct_003", name, st.Faults)
		}
	}
}

package apisim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/jsonapi"
)

// fleetEnv is a Fleet behind a real HTTP server.
type fleetEnv struct {
	t     *testing.T
	fleet *Fleet
	srv   *httptest.Server
}

func newFleetEnv(t *testing.T, opts FleetOptions) *fleetEnv {
	t.Helper()
	if opts.Now == nil {
		opts.Now = newClock().Now
	}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	e := &fleetEnv{t: t, fleet: NewFleet(opts)}
	e.srv = httptest.NewServer(e.fleet)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *fleetEnv) account(name string) FleetAccount {
	e.t.Helper()
	for _, a := range e.fleet.Accounts() {
		if a.Name == name {
			return a
		}
	}
	e.t.Fatalf("no account %q", name)
	return FleetAccount{}
}

// client is a jsonapi client of account name's base URL with token, one
// attempt per request.
func (e *fleetEnv) client(name, token string) *jsonapi.Client {
	e.t.Helper()
	c, err := jsonapi.NewClient(jsonapi.Options{BaseURL: e.srv.URL + AccountsPath + name,
		Auth: jsonapi.StaticToken(token), MaxAttempts: 1, HTTPClient: e.srv.Client()})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// walkUsers walks users ten a page and returns their ids and emails; every
// next link must stay under the base URL it was given.
func walkUsers(t *testing.T, c *jsonapi.Client, base string) ([]int64, []string, error) {
	t.Helper()
	var ids []int64
	var emails []string
	pages := c.Collection("users", jsonapi.Query{}.PageSize(10))
	for {
		p, err := pages.Next(context.Background())
		if err != nil || p == nil {
			return ids, emails, err
		}
		if p.NextURL != "" && !strings.HasPrefix(p.NextURL, base+"/api/v2/users?") {
			t.Errorf("links.next %s leaves the account's base URL %s", p.NextURL, base)
		}
		for _, r := range p.Data {
			if self := string(r.Links.Self); !strings.HasPrefix(self, base+"/api/v2/users/") {
				t.Errorf("links.self %s leaves the account's base URL %s", self, base)
			}
			var attrs struct{ Email string }
			mustUnmarshal(t, r.Attributes, &attrs)
			ids = append(ids, int64(r.ID))
			emails = append(emails, attrs.Email)
		}
	}
}

func truthEmails(t *testing.T, s *Server) []string {
	t.Helper()
	var out []string
	for u := range s.AllUsers() {
		e, _ := u.Attributes["email"].(string)
		out = append(out, e)
	}
	return out
}

// TestFleetAccountsNeverMix walks two accounts with the jsonapi client:
// each lists only its own users, under its own prefix, and refuses the
// other's token; the unprefixed paths still serve the default dataset.
func TestFleetAccountsNeverMix(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t, FleetOptions{Seed: 7, Default: &Options{Seed: 1, Users: 12},
		Accounts: []AccountOptions{{Name: "alpha", Options: Options{Users: 35}}, {Name: "beta", Options: Options{Users: 21}}}})
	alpha, beta := e.account("alpha"), e.account("beta")
	for _, a := range []FleetAccount{alpha, beta} {
		ids, emails, err := walkUsers(t, e.client(a.Name, a.Token), e.srv.URL+a.Path)
		if err != nil {
			t.Fatalf("walking %s: %v", a.Name, err)
		}
		if !slices.Equal(ids, a.Server.UserIDs()) || !slices.Equal(emails, truthEmails(t, a.Server)) {
			t.Errorf("%s served ids %v emails %v, want its own %v", a.Name, ids, emails[:3], a.Server.UserIDs())
		}
	}
	if slices.Equal(truthEmails(t, alpha.Server)[:21], truthEmails(t, beta.Server)) {
		t.Error("alpha's and beta's users are the same people: each account needs its own dataset")
	}
	_, _, err := walkUsers(t, e.client("alpha", beta.Token), e.srv.URL+alpha.Path)
	if ae := (*jsonapi.AuthError)(nil); !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Errorf("alpha with beta's token: %v, want a 401", err)
	}
	def, err := jsonapi.NewClient(jsonapi.Options{BaseURL: e.srv.URL, Auth: jsonapi.StaticToken("any"), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _, err := walkUsers(t, def, e.srv.URL); err != nil || !slices.Equal(ids, e.fleet.Default().UserIDs()) {
		t.Errorf("the unprefixed paths served %v, %v; want the default dataset's %d users", ids, err, 12)
	}
	for _, path := range []string{"/accounts/nobody/api/v2/users", "/accounts/default/api/v2/users", "/accounts/"} {
		if st, _ := rawGet(t, e.srv.URL+path, alpha.Token); st != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, st)
		}
	}
}

func rawGet(t *testing.T, u, token string) (int, []byte) {
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
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// TestFleetOAuthPerAccount gets an access token from one account's token
// endpoint, under its prefix: it opens that account only.
func TestFleetOAuthPerAccount(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t, FleetOptions{Seed: 3, Accounts: []AccountOptions{
		{Name: "oa", Options: Options{Users: 15, ClientID: "cid", ClientSecret: "cs", RefreshToken: "rt-oa"}},
		{Name: "ob", Options: Options{Users: 15, ClientID: "cid", ClientSecret: "cs", RefreshToken: "rt-ob"}}}})
	oauth, err := jsonapi.NewOAuth(jsonapi.OAuthConfig{TokenURL: e.srv.URL + "/accounts/oa/oauth/token",
		ClientID: "cid", ClientSecret: "cs", RefreshToken: "rt-oa"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := jsonapi.NewClient(jsonapi.Options{BaseURL: e.srv.URL + "/accounts/oa", Auth: oauth, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := walkUsers(t, c, e.srv.URL+"/accounts/oa")
	if err != nil || len(ids) != 15 {
		t.Fatalf("walking oa with OAuth: %d users, %v", len(ids), err)
	}
	tok, err := oauth.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st, body := rawGet(t, e.srv.URL+"/accounts/ob/api/v2/users", tok); st != http.StatusUnauthorized {
		t.Errorf("ob with oa's access token: %d %s", st, body)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {e.fleet.Account("oa").RefreshToken()},
		"client_id": {"cid"}, "client_secret": {"cs"}}
	resp, err := http.PostForm(e.srv.URL+"/accounts/ob/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("ob's token endpoint with oa's refresh token: %d, want 400 invalid_grant", resp.StatusCode)
	}
	if g := e.fleet.Account("ob").TokenGrants(); g != 0 {
		t.Errorf("ob granted %d tokens", g)
	}
}

// TestFleetFaultsStayInTheirAccount breaks one account after another (a
// revoked token, failures, a spent rate limit, a token revoked after two
// requests) while a healthy account is walked in full each time.
func TestFleetFaultsStayInTheirAccount(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t, FleetOptions{Seed: 11, Accounts: []AccountOptions{
		{Name: "healthy", Options: Options{Users: 40, Knobs: Knobs{RateLimit: 100}}},
		{Name: "broken", Options: Options{Users: 40, Knobs: Knobs{RateLimit: 3}}},
		{Name: "late", Options: Options{Users: 40, RevokeAfter: 2}},
		{Name: "gone", Options: Options{Users: 5, Revoked: true}}}})
	healthy, broken := e.account("healthy"), e.account("broken")
	walkHealthy := func(when string) {
		t.Helper()
		ids, _, err := walkUsers(t, e.client("healthy", healthy.Token), e.srv.URL+healthy.Path)
		if err != nil || len(ids) != 40 {
			t.Errorf("%s: the healthy account served %d users, %v", when, len(ids), err)
		}
	}
	for i := range 3 { // broken spends its own budget of 3
		if code, _ := rawGet(t, e.srv.URL+broken.Path+"/api/v2/users", broken.Token); code != http.StatusOK {
			t.Fatalf("broken's request %d: %d", i+1, code)
		}
	}
	if code, _ := rawGet(t, e.srv.URL+broken.Path+"/api/v2/users", broken.Token); code != http.StatusTooManyRequests {
		t.Errorf("broken over its budget: %d, want 429", code)
	}
	walkHealthy("with broken's budget spent")
	if err := broken.Server.UpdateKnobs(func(k *Knobs) { k.FailEvery, k.FailStatus = 1, 500 }); err != nil {
		t.Fatal(err)
	}
	broken.Server.RevokeTokens()
	walkHealthy("with broken failing and revoked")
	late := e.account("late")
	for i, want := range []int{200, 200, 401, 401} {
		if code, _ := rawGet(t, e.srv.URL+late.Path+"/api/v2/teams", late.Token); code != want {
			t.Errorf("late's request %d: %d, want %d", i+1, code, want)
		}
	}
	gone := e.account("gone")
	if code, _ := rawGet(t, e.srv.URL+gone.Path+"/api/v2/users", gone.Token); code != http.StatusUnauthorized {
		t.Errorf("gone, revoked from the start: %d, want 401", code)
	}
	walkHealthy("after late's and gone's revocations")
	if st := healthy.Server.Stats(); st.Faults != 0 || st.RateLimited != 0 || st.ByStatus[401] != 0 {
		t.Errorf("the healthy account saw faults %d, 429s %d, 401s %d", st.Faults, st.RateLimited, st.ByStatus[401])
	}
	if st := e.fleet.Stats(); st.RateLimited != 1 || st.Requests != 3*4+4+4+1 {
		t.Errorf("fleet stats: %+v", st)
	}
}

// TestFleetDeterministic: an account's bytes depend on the fleet seed, its
// name and its options only, and equal a lone Server's with AccountSeed, so
// the generators the accounts share cannot leak one account into another.
func TestFleetDeterministic(t *testing.T) {
	t.Parallel()
	const base = "http://sim.test"
	build := func(seed int64, names ...string) *fleetEnv {
		var accts []AccountOptions
		for _, n := range names {
			accts = append(accts, AccountOptions{Name: n, Options: Options{Users: 30, Knobs: Knobs{StringIDs: n == "b"}}})
		}
		return newFleetEnv(t, FleetOptions{Seed: seed, BaseURL: base, Accounts: accts})
	}
	page := func(e *fleetEnv, name string) []byte {
		a := e.account(name)
		st, body := rawGet(t, e.srv.URL+a.Path+"/api/v2/users?page[size]=7&include=role,teams&sort=-updatedAt", a.Token)
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", name, st, body)
		}
		return body
	}
	one, two, other := build(5, "a", "b"), build(5, "b", "z", "a"), build(6, "a")
	if a1, a2 := page(one, "a"), page(two, "a"); string(a1) != string(a2) {
		t.Errorf("account a differs between two fleets of seed 5:\n%.300s\n%.300s", a1, a2)
	}
	if a, b := page(one, "a"), page(one, "b"); string(a) == string(b) {
		t.Error("accounts a and b serve the same bytes")
	}
	if a1, a6 := page(one, "a"), page(other, "a"); string(a1) == string(a6) {
		t.Error("account a serves the same bytes under seeds 5 and 6")
	}
	if one.account("a").Token != two.account("a").Token || one.account("a").Token == one.account("b").Token {
		t.Error("derived tokens must depend on the seed and the name only")
	}
	lone := New(Options{Seed: AccountSeed(5, "a"), Users: 30, Now: newClock().Now, BaseURL: base + "/accounts/a"})
	srv := httptest.NewServer(lone)
	defer srv.Close()
	st, body := rawGet(t, srv.URL+"/api/v2/users?page[size]=7&include=role,teams&sort=-updatedAt", "x")
	if a := page(one, "a"); st != http.StatusOK || string(body) != string(a) {
		t.Errorf("a lone Server with AccountSeed differs from the fleet's account:\n%.300s\n%.300s", body, a)
	}
}

func TestFleetOptionsValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		o    FleetOptions
		want string
	}{
		"bad name":    {FleetOptions{Accounts: []AccountOptions{{Name: "Acme"}}}, `account name "Acme" must match`},
		"long name":   {FleetOptions{Accounts: []AccountOptions{{Name: strings.Repeat("a", 41)}}}, "must match"},
		"reserved":    {FleetOptions{Accounts: []AccountOptions{{Name: "default"}}}, "reserved"},
		"twice":       {FleetOptions{Accounts: []AccountOptions{{Name: "a"}, {Name: "a"}}}, `"a" is given twice`},
		"same token":  {FleetOptions{Accounts: []AccountOptions{{Name: "a", Options: Options{Token: "t"}}, {Name: "b", Options: Options{Token: "t"}}}}, "same Token"},
		"own seed":    {FleetOptions{Accounts: []AccountOptions{{Name: "a", Options: Options{Seed: 2}}}}, "leave them zero"},
		"bad options": {FleetOptions{Accounts: []AccountOptions{{Name: "a", Options: Options{Users: -1}}}}, `account "a": Users`},
		"bad default": {FleetOptions{Default: &Options{RevokeAfter: -1}}, "default dataset: "},
		"base path":   {FleetOptions{BaseURL: "http://h/x"}, "without a path"},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if err := (FleetOptions{Accounts: []AccountOptions{{Name: "a_1"}, {Name: "b"}}}).Validate(); err != nil {
		t.Error(err)
	}
}

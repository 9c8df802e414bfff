package apisim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AccountsPath is the path under which a Fleet serves its accounts: account
// NAME's base URL is the fleet's URL + AccountsPath + NAME.
const AccountsPath = "/accounts/"

// accountName is usersync's account-name rule, so that every
// simulated account can be registered as it is named.
var accountName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// FleetOptions configures a Fleet: many accounts, each its own simulated
// API under its own path prefix, plus an optional default dataset at the
// unprefixed paths.
type FleetOptions struct {
	// Seed, with each account's name, seeds the account's dataset, fault
	// draws and tokens: the same Seed, name, options and clock give the
	// same bytes, whatever the other accounts.
	Seed int64
	// Default, when set, is served at the unprefixed paths (/api/v2/...,
	// /oauth/...) exactly as New(*Default) serves it, its own Seed
	// included; nil answers them 404.
	Default *Options
	// Accounts are served at AccountsPath + Name.
	Accounts []AccountOptions
	// Now, Logger and BaseURL are every account's (see Options); an
	// account's logs carry account=<name>, and its links BaseURL + its path.
	Now     func() time.Time
	Logger  *slog.Logger
	BaseURL string
}

// AccountOptions configures one account of a Fleet. Its Options are a
// Server's, except that Seed, Now, Logger and BaseURL come from the fleet
// and must be left zero. Without Token, RefreshToken or ClientID the
// account gets a static token derived from the seed and its name (see
// FleetAccount.Token), so that no account accepts another's token.
type AccountOptions struct {
	// Name is the account's name: ^[a-z][a-z0-9_]{0,39}$, unique, and not
	// "default" (usersync's name for its unregistered account).
	Name string
	Options
}

// Validate reports every invalid option, naming the account.
func (o FleetOptions) Validate() error {
	var errs []error
	if o.Default != nil {
		if err := o.Default.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("default dataset: %w", err))
		}
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || u.Scheme == "" || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			errs = append(errs, errors.New("BaseURL must be an absolute URL without a path, such as https://api.example.com"))
		}
	}
	seen := make(map[string]bool, len(o.Accounts))
	tokens := make(map[string]string, len(o.Accounts))
	for _, a := range o.Accounts {
		if err := a.validate(seen, tokens); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a AccountOptions) validate(seen map[string]bool, tokens map[string]string) error {
	switch {
	case !accountName.MatchString(a.Name):
		return fmt.Errorf("account name %q must match %s", a.Name, accountName)
	case a.Name == "default":
		return errors.New(`account name "default" is reserved for the unprefixed dataset`)
	case seen[a.Name]:
		return fmt.Errorf("account name %q is given twice", a.Name)
	case a.Seed != 0 || a.Now != nil || a.Logger != nil || a.BaseURL != "":
		return fmt.Errorf("account %q: Seed, Now, Logger and BaseURL come from FleetOptions; leave them zero", a.Name)
	}
	seen[a.Name] = true
	if a.Token != "" {
		if other, dup := tokens[a.Token]; dup {
			return fmt.Errorf("accounts %q and %q have the same Token: each account's token must be its own", other, a.Name)
		}
		tokens[a.Token] = a.Name
	}
	server := a.Options
	if err := server.Validate(); err != nil {
		return fmt.Errorf("account %q: %w", a.Name, err)
	}
	return nil
}

// Fleet serves many simulated accounts at once; it is an http.Handler.
// Each account is a Server of its own (its dataset, tokens, rate-limit
// budget, knobs, mutations and counters), reached with Account.
type Fleet struct {
	def      *Server
	accounts map[string]*FleetAccount
	order    []*FleetAccount
}

// FleetAccount is one account of a Fleet.
type FleetAccount struct {
	// Name is the account's name; Path its prefix, AccountsPath + Name: the
	// account's API base URL is the fleet's URL + Path.
	Name, Path string
	// Token is the account's static bearer token ("" for an OAuth account
	// without one).
	Token string
	// Server is the account's simulator: its ground truth, mutations,
	// knobs, counters and RevokeTokens.
	Server *Server

	strip http.Handler
}

var _ http.Handler = (*Fleet)(nil)

// NewFleet builds every account's dataset, in parallel. It panics if opts
// is invalid: call FleetOptions.Validate first to report configuration
// errors.
func NewFleet(opts FleetOptions) *Fleet {
	if err := opts.Validate(); err != nil {
		panic("apisim: invalid fleet options: " + err.Error())
	}
	f := &Fleet{accounts: make(map[string]*FleetAccount, len(opts.Accounts)),
		order: make([]*FleetAccount, len(opts.Accounts))}
	if opts.Default != nil {
		f.def = New(*opts.Default)
	}
	cat := newCatalog()
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(1, len(opts.Accounts))) {
		wg.Go(func() {
			for i := range work {
				f.order[i] = newAccount(&opts, opts.Accounts[i], cat)
			}
		})
	}
	for i := range opts.Accounts {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, a := range f.order {
		f.accounts[a.Name] = a
	}
	return f
}

// newAccount builds one account's Server.
func newAccount(fo *FleetOptions, ao AccountOptions, c *catalog) *FleetAccount {
	o := ao.Options
	o.Seed = AccountSeed(fo.Seed, ao.Name)
	o.Now, o.BaseURL = fo.Now, fo.BaseURL
	if fo.Logger != nil {
		o.Logger = fo.Logger.With("account", ao.Name)
	}
	if o.Token == "" && o.RefreshToken == "" && o.ClientID == "" {
		o.Token = AccountToken(fo.Seed, ao.Name)
	}
	a := &FleetAccount{Name: ao.Name, Path: AccountsPath + ao.Name, Token: o.Token}
	a.Server = newServer(o, c, a.Path)
	a.strip = http.StripPrefix(a.Path, a.Server)
	return a
}

// catalog is what every account of a Fleet shares: the value pools and the
// user attributes' generators, derived from the API's catalog alone (about
// 100 kB), and the response buffers (a pool per account would keep a
// buffer per account between collections). The generators read only
// pools, userAttrs and ix of the Server they were built on; the seed
// reaches them through userCtx.base. TestFleetDeterministic keeps that true.
type catalog struct {
	pools     *pools
	userAttrs []userAttr
	ix        attrIdx
	bufs      *sync.Pool
}

func newCatalog() *catalog {
	t := &Server{pools: newPools(225, 1024)}
	t.buildUserAttrs()
	return &catalog{pools: t.pools, userAttrs: t.userAttrs, ix: t.ix, bufs: &sync.Pool{}}
}

// AccountSeed is the seed of account name's dataset in a fleet seeded with
// seed.
func AccountSeed(seed int64, name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name)) // a hash's Write never fails
	return int64(mix(uint64(seed)*golden ^ h.Sum64()))
}

// AccountToken is the static token an account of a fleet seeded with seed
// gets when its options name no credential.
func AccountToken(seed int64, name string) string {
	r := rng{s: mix(uint64(AccountSeed(seed, name)) ^ saltTokens)}
	return "sim-" + name + "-" + strconv.FormatUint(r.next(), 36) + strconv.FormatUint(r.next(), 36)
}

// Account returns the account's Server, or nil for an unknown name.
func (f *Fleet) Account(name string) *Server {
	if a := f.accounts[name]; a != nil {
		return a.Server
	}
	return nil
}

// Accounts returns every account, in the order of FleetOptions.Accounts.
func (f *Fleet) Accounts() []FleetAccount {
	out := make([]FleetAccount, len(f.order))
	for i, a := range f.order {
		out[i] = *a
	}
	return out
}

// Default returns the Server of the unprefixed paths, or nil.
func (f *Fleet) Default() *Server { return f.def }

// ServeHTTP routes AccountsPath + NAME + "/..." to account NAME's Server,
// with the prefix stripped (its links put it back), and every other path to
// the default dataset.
func (f *Fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, AccountsPath)
	if !ok {
		if f.def != nil {
			f.def.ServeHTTP(w, r)
			return
		}
		notFound(w, "No route matches "+r.Method+" "+r.URL.Path+": the accounts are under "+AccountsPath+"<name>")
		return
	}
	name, _, _ := strings.Cut(rest, "/")
	a := f.accounts[name]
	if a == nil {
		notFound(w, "No account is named '"+name+"'.")
		return
	}
	a.strip.ServeHTTP(w, r)
}

// notFound answers a request no account serves.
func notFound(w http.ResponseWriter, detail string) {
	body := appendErrorDoc(nil, &apiError{status: 404, id: "resourceNotFound", title: "Not Found", detail: detail})
	w.Header().Set("Content-Type", "application/vnd.api+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(body) // the client went away: no one to tell
}

// Stats returns the sum of every account's counters and the default
// dataset's; the maps (ByEndpoint, ByStatus, Resources) are left nil: read
// them per account, with Account(name).Stats().
func (f *Fleet) Stats() Stats {
	var sum Stats
	add := func(st Stats) {
		sum.Requests += st.Requests
		sum.RateLimited += st.RateLimited
		sum.Faults += st.Faults
		sum.Truncated += st.Truncated
		sum.Bytes += st.Bytes
		sum.Pages += st.Pages
		sum.ChurnRounds += st.ChurnRounds
	}
	if f.def != nil {
		add(f.def.Stats())
	}
	for _, a := range f.order {
		add(a.Server.Stats())
	}
	return sum
}

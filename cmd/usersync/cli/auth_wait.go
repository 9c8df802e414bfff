package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse/accounts"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// registered says whether e is a registered account's (--account NAME),
// whose remedies name it.
func (e *env) registered() bool { return e.account != "" && e.account != accounts.Default }

// authRemedy is authRemedy for e's account: a registered account's names
// it (--account NAME).
func (e *env) authRemedy() string {
	if e.registered() {
		return accountAuthRemedy(e.account, e.cfg)
	}
	return authRemedy(e.cfg)
}

// remedyOf says what to do when the API refuses the credentials of
// account name, for a worker's job: the default account's authRemedy, or a
// registered account's, which names it and follows its way to authenticate
// (read from the registry, since the job's account may have changed).
func remedyOf(ctx context.Context, e *env, name string) string {
	if name == accounts.Default || name == "" {
		return authRemedy(e.fleetConfig())
	}
	ae, err := accountEnv(ctx, e, name)
	if err != nil {
		return "run usersync auth login --account " + name + ", or store a valid token with usersync accounts set " + name +
			" --api-token-file FILE (its settings could not be read: " + oneLine(err.Error()) + ")"
	}
	return ae.authRemedy()
}

// loginWaits are the accounts whose OAuth grant a worker waits for (no
// refresh token stored yet), for /healthz.
type loginWaits struct {
	mu       sync.Mutex
	accounts map[string]bool
}

func newLoginWaits() *loginWaits { return &loginWaits{accounts: map[string]bool{}} }

func (l *loginWaits) set(account string, waiting bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if waiting {
		l.accounts[account] = true
	} else {
		delete(l.accounts, account)
	}
}

// note says which accounts wait for their login, "" when none does.
func (l *loginWaits) note() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.accounts) == 0 {
		return ""
	}
	var names []string
	for n := range l.accounts {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 1 {
		return fmt.Sprintf("no OAuth refresh token is stored for account %s: its jobs wait until %s stores one",
			names[0], jobs.LoginCommand(names[0]))
	}
	return fmt.Sprintf("no OAuth refresh token is stored for accounts %s: their jobs wait until usersync auth login [--account NAME] stores one",
		strings.Join(names, ", "))
}

// awaitLogin is the authenticator of a worker's account that uses OAuth
// while no refresh token is stored for it (usersync auth login has not run
// yet): rather than exit, the worker works, and until a token is stored each
// request fails with jobs.ErrAwaitingLogin and the command to run, so the
// account's jobs wait (jobs snooze them). It reads the store again at each
// request until it finds a token, then hands over to the OAuth client,
// which reads it from there on. It logs the first wait once, at ERROR.
type awaitLogin struct {
	oauth   *jsonapi.OAuth
	store   *tokens.Store
	waits   *loginWaits
	account string // e's: the default account's client serves jobs that name none
	logger  *slog.Logger
	stored  atomic.Bool
	told    sync.Once
}

// Token implements jsonapi.Authenticator.
func (a *awaitLogin) Token(ctx context.Context) (string, error) {
	if !a.stored.Load() {
		name := a.account
		if job, ok := jobs.AccountOf(ctx); ok {
			name = job
		}
		refresh, err := a.store.Load(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the stored OAuth refresh token: %w", err)
		}
		if refresh == "" {
			a.waits.set(name, true)
			a.told.Do(func() {
				a.logger.ErrorContext(ctx, "OAuth is configured but no refresh token is stored for the account: the worker works on, and the account's jobs wait until one is",
					"action", jobs.LoginCommand(name)+" (with the worker's settings and DATABASE_URL)")
			})
			return "", fmt.Errorf("%w for this client and token URL: run %s", jobs.ErrAwaitingLogin, jobs.LoginCommand(name))
		}
		a.stored.Store(true)
		a.waits.set(name, false)
		a.logger.InfoContext(ctx, "an OAuth refresh token is stored for the account now: its jobs run")
	}
	return a.oauth.Token(ctx)
}

// Invalidate implements jsonapi.Authenticator.
func (a *awaitLogin) Invalidate(token string) bool { return a.oauth.Invalidate(token) }

// String hides the secrets from fmt verbs.
func (a *awaitLogin) String() string { return "awaitLogin(" + a.oauth.String() + ")" }

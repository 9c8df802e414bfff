package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usersync/usersync/sync/jsondoc"
)

// OAuthConfig configures an OAuth refresh-token Authenticator. TokenURL,
// ClientID, ClientSecret and RefreshToken are required; the rest defaults.
type OAuthConfig struct {
	// TokenURL is the token endpoint, such as "https://api.example.com/oauth/token".
	TokenURL string
	// ClientID and ClientSecret identify the OAuth application.
	ClientID, ClientSecret string
	// RefreshToken is the configured refresh token. A token in Store is
	// preferred; this one is the fallback when the store is empty or the
	// endpoint refuses the stored one.
	RefreshToken string
	// URLSetting names what holds TokenURL, such as
	// USERSYNC_OAUTH_TOKEN_URL, in the error of an endpoint that never
	// answers. Default: "its URL".
	URLSetting string
	// Store keeps the rotated refresh token. Default: a MemoryTokenStore.
	Store TokenStore
	// HTTPClient posts to the token endpoint (golang.org/x/oauth2 is given
	// it): redirects to another origin are refused whatever its policy.
	// Default: a new http.Client.
	HTTPClient *http.Client
	// UserAgent is sent as User-Agent. Default "usersync-jsonapi".
	UserAgent string
	// Logger receives a record per refresh. Default: discard.
	Logger *slog.Logger
	// Clock tells the time and sleeps between retries. Default SystemClock.
	Clock Clock
	// MaxAttempts bounds the attempts of one refresh when the endpoint
	// fails with 429, 5xx or a network error. Default 5.
	MaxAttempts int
	// BackoffBase is the first retry delay, doubled per attempt. Default 1s.
	BackoffBase time.Duration
	// BackoffMax caps one retry delay, Retry-After included. Default 60s.
	BackoffMax time.Duration
	// RequestTimeout bounds each post. Default 30s.
	RequestTimeout time.Duration
}

// OAuth is an Authenticator using the OAuth 2 refresh-token grant, which
// golang.org/x/oauth2 runs; the policy is this package's. It
// refreshes the access token shortly before it expires (10% of its
// lifetime, at most 60s, ahead) and when the API answers 401, saves every
// rotated refresh token to the store, and never runs two refreshes at once:
// concurrent callers wait for the one in flight. A token response without
// expires_in is refreshed on 401 only. It is safe for concurrent use.
type OAuth struct {
	cfg       OAuthConfig
	client    *http.Client // cfg.HTTPClient, redirects refused, headers set
	refreshes atomic.Int64
	// shared says the caller gave the Store: another process may save a
	// rotated token in it (a store NewOAuth made is this process's alone).
	shared bool

	mu        sync.Mutex
	access    string
	expiresAt time.Time // of access; zero when the endpoint did not say
	refreshAt time.Time // zero: refresh only on 401
	refresh   string    // current refresh token
	scope     string    // of the grant, as the endpoint last said; "" unknown
	loaded    bool      // the store was read
	unsaved   bool      // refresh is newer than the store
	inflight  *refreshCall
}

// refreshCall is a refresh in flight, shared by every caller waiting on it.
type refreshCall struct {
	done  chan struct{}
	token string
	err   error
}

var _ Authenticator = (*OAuth)(nil)

// NewOAuth checks cfg and returns an OAuth Authenticator. It does not
// contact the token endpoint until the first Token call.
func NewOAuth(cfg OAuthConfig) (*OAuth, error) {
	u, err := url.Parse(cfg.TokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("jsonapi: OAuthConfig.TokenURL must be an absolute http or https URL")
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("jsonapi: OAuthConfig.ClientID and OAuthConfig.ClientSecret are required")
	}
	if cfg.RefreshToken == "" && cfg.Store == nil {
		return nil, errors.New("jsonapi: OAuthConfig.RefreshToken is required when no Store is given")
	}
	shared := cfg.Store != nil
	if !shared {
		cfg.Store = NewMemoryTokenStore("")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "usersync-jsonapi"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	setDefault(&cfg.MaxAttempts, 5)
	setDefault(&cfg.BackoffBase, time.Second)
	setDefault(&cfg.BackoffMax, 60*time.Second)
	setDefault(&cfg.RequestTimeout, 30*time.Second)
	return &OAuth{cfg: cfg, client: tokenClient(cfg.HTTPClient, cfg.UserAgent), shared: shared}, nil
}

// Refreshes returns how many refreshes succeeded.
func (o *OAuth) Refreshes() int64 { return o.refreshes.Load() }

// String hides the secrets from fmt verbs.
func (o *OAuth) String() string { return "OAuth(" + sanitizeURL(o.cfg.TokenURL) + ")" }

// Invalidate implements Authenticator: the next Token call refreshes unless
// another caller already replaced token.
func (o *OAuth) Invalidate(token string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.access == token {
		o.access = ""
	}
	return true
}

// Token implements Authenticator. It returns the current access token, or
// refreshes it (once for all concurrent callers) when it is missing,
// invalidated or about to expire.
func (o *OAuth) Token(ctx context.Context) (string, error) {
	for {
		o.mu.Lock()
		if o.access != "" && !o.unsaved && (o.refreshAt.IsZero() || o.cfg.Clock.Now().Before(o.refreshAt)) {
			token := o.access
			o.mu.Unlock()
			return token, nil
		}
		call := o.inflight
		if call == nil {
			call = &refreshCall{done: make(chan struct{})}
			o.inflight = call
			o.mu.Unlock()
			call.token, call.err = o.lead(ctx)
			o.mu.Lock()
			o.inflight = nil
			o.mu.Unlock()
			close(call.done)
			return call.token, call.err
		}
		o.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		// A refresh that died of its leader's cancellation says nothing
		// about this caller: try again, leading this time if need be.
		if call.err != nil && isContextError(call.err) && ctx.Err() == nil {
			continue
		}
		return call.token, call.err
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// lead runs the refresh on behalf of every waiting caller. Only one lead
// runs at a time, so it reads its own fields without racing; it takes the
// lock to publish them.
func (o *OAuth) lead(ctx context.Context) (string, error) {
	if err := o.loadOnce(ctx); err != nil {
		return "", err
	}
	o.mu.Lock()
	valid := o.access != "" && (o.refreshAt.IsZero() || o.cfg.Clock.Now().Before(o.refreshAt))
	access, refresh, unsaved := o.access, o.refresh, o.unsaved
	o.mu.Unlock()
	if valid && unsaved {
		// Only the save of the last rotated refresh token failed: redo it.
		return access, o.save(ctx, refresh)
	}
	started := o.cfg.Clock.Now()
	tr, refresh, err := o.refreshAny(ctx, refresh)
	if err != nil {
		err = fmt.Errorf("refreshing OAuth token: %w", err)
		o.recordFailure(ctx, err)
		return "", err
	}
	o.refreshes.Add(1)
	o.publish(tr, started)
	rotated := tr.refresh != "" && tr.refresh != refresh
	o.cfg.Logger.DebugContext(ctx, "oauth token refreshed", "expires_in_s", tr.expiresIn, "rotated", rotated)
	if rotated {
		return tr.access, o.save(ctx, tr.refresh)
	}
	if gs, ok := o.cfg.Store.(GrantStore); ok {
		// Not rotated: the access token, its expiry and the scope are news.
		if err := o.saveGrant(ctx, gs, refresh); err != nil {
			o.cfg.Logger.WarnContext(ctx, "recording the access token's expiry failed", "err", err.Error())
		}
	}
	return tr.access, nil
}

// refreshAny refreshes with refresh, or when the endpoint refuses it, with
// the one another process stored, then the configured one. It returns the
// token and the refresh token that got it.
func (o *OAuth) refreshAny(ctx context.Context, refresh string) (token, string, error) {
	tr, err := o.exchange(ctx, refresh)
	if err != nil && isRefused(err) {
		// Another process sharing the store (a replica) may have rotated the
		// token since this one read it: the stored one is then the live one.
		if stored := o.storedOther(ctx, refresh); stored != "" {
			o.cfg.Logger.InfoContext(ctx, "refresh token refused; using the one another process stored")
			refresh = stored
			tr, err = o.exchange(ctx, refresh)
		}
	}
	if err != nil && isRefused(err) && o.cfg.RefreshToken != "" && o.cfg.RefreshToken != refresh {
		o.cfg.Logger.WarnContext(ctx, "stored refresh token refused, falling back to the configured one")
		refresh = o.cfg.RefreshToken
		o.mu.Lock()
		o.refresh = refresh
		o.mu.Unlock()
		tr, err = o.exchange(ctx, refresh)
	}
	return tr, refresh, err
}

// Waiting for a rotation another process is saving: how often the store is
// read again, and how long apart.
const (
	rotationReads = 8
	rotationPause = 250 * time.Millisecond
)

// storedOther returns the refresh token stored by another process, other
// than refresh, or "" when none comes. A replica that rotated the token
// saves it just after the endpoint answers, so for a moment the store still
// holds the token it refused: the store is read again a few times.
func (o *OAuth) storedOther(ctx context.Context, refresh string) string {
	reads := 1
	if o.shared {
		reads = rotationReads
	}
	for i := range reads {
		if stored, err := o.cfg.Store.Load(ctx); err == nil && stored != "" && stored != refresh {
			return stored
		}
		if i == reads-1 {
			break
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(rotationPause):
		}
	}
	return ""
}

// recordFailure tells a GrantStore that the refresh failed, for auth
// status; a refresh that died of ctx says nothing about the grant.
func (o *OAuth) recordFailure(ctx context.Context, err error) {
	gs, ok := o.cfg.Store.(GrantStore)
	if !ok || ctx.Err() != nil {
		return
	}
	code := ""
	if ae := (*AuthError)(nil); errors.As(err, &ae) {
		code = ae.Code
		if code == "" {
			code = statusLine(ae.StatusCode)
		}
	}
	if serr := gs.SaveRefreshFailure(ctx, code, jsondoc.OneLine(err.Error())); serr != nil {
		o.cfg.Logger.WarnContext(ctx, "recording the failed refresh failed", "err", serr.Error())
	}
}

// saveGrant saves refresh and the current access token, its expiry and the
// scope to gs.
func (o *OAuth) saveGrant(ctx context.Context, gs GrantStore, refresh string) error {
	o.mu.Lock()
	access, expires, scope := o.access, o.expiresAt, o.scope
	o.mu.Unlock()
	return gs.SaveGrant(ctx, refresh, access, expires, scope)
}

// loadOnce reads the store on the first refresh: a stored refresh token
// is preferred to the configured one.
func (o *OAuth) loadOnce(ctx context.Context) error {
	if o.loaded {
		return nil
	}
	stored, err := o.cfg.Store.Load(ctx)
	if err != nil {
		return fmt.Errorf("loading refresh token: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.loaded = true
	o.refresh = o.cfg.RefreshToken
	if stored != "" {
		o.refresh = stored
	}
	if o.refresh == "" {
		return errors.New("no refresh token: the store is empty and OAuthConfig.RefreshToken is unset")
	}
	return nil
}

// publish stores a new access token and, if rotated, refresh token.
func (o *OAuth) publish(tr token, started time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.access = tr.access
	if tr.scope != "" {
		o.scope = tr.scope
	}
	o.refreshAt, o.expiresAt = time.Time{}, time.Time{}
	// A year bounds expires_in, whose seconds would overflow a Duration.
	if life := time.Duration(min(tr.expiresIn, 366*24*3600)) * time.Second; life > 0 {
		margin := min(life/10, 60*time.Second)
		o.refreshAt = started.Add(life - margin)
		o.expiresAt = started.Add(life)
	}
	if tr.refresh != "" && tr.refresh != o.refresh {
		o.refresh, o.unsaved = tr.refresh, true
	}
}

// save writes the rotated refresh token to the store. On failure the token
// stays in memory and marked unsaved, so the next Token call saves again.
func (o *OAuth) save(ctx context.Context, refresh string) error {
	var err error
	if gs, ok := o.cfg.Store.(GrantStore); ok {
		err = o.saveGrant(ctx, gs, refresh)
	} else {
		err = o.cfg.Store.Save(ctx, refresh)
	}
	if err != nil {
		return fmt.Errorf("saving rotated refresh token: %w", err)
	}
	o.mu.Lock()
	if o.refresh == refresh {
		o.unsaved = false
	}
	o.mu.Unlock()
	return nil
}

// isRefused reports whether err is the token endpoint refusing the grant.
func isRefused(err error) bool {
	var ae *AuthError
	return errors.As(err, &ae)
}

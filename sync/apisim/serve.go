package apisim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// FleetLayout is the accounts usersync simulate --accounts serves beside
// the default dataset, by position: Large large ones first, OAuth ones with
// an OAuth client after them, Faults with the fault knobs last and Revoked
// with a revoked grant just before them.
type FleetLayout struct {
	Accounts, Users, Large, LargeUsers int
	Faults, Revoked, RevokeAfter       int
	OAuth                              int
	// File is where the account lines go ("": standard output).
	File string
}

// Validate reports the first bad layout, naming the flag of usersync
// simulate that sets it.
func (l FleetLayout) Validate() error {
	switch {
	case l.Accounts < 0 || l.Accounts > 100_000:
		return errors.New("--accounts must be between 0 and 100000")
	case l.Users < 1 || l.LargeUsers < 1:
		return errors.New("--account-users and --large-users must be at least 1")
	case l.Large < 0 || l.Large > l.Accounts:
		return fmt.Errorf("--large-accounts must be between 0 and --accounts (%d)", l.Accounts)
	case l.OAuth < 0 || l.Large+l.OAuth > l.Accounts:
		return fmt.Errorf("--oauth-accounts must be between 0 and --accounts minus --large-accounts (%d)", l.Accounts-l.Large)
	case l.Faults < 0 || l.Faults > l.Accounts:
		return fmt.Errorf("--fault-accounts must be between 0 and --accounts (%d)", l.Accounts)
	case l.Revoked < 0 || l.Faults+l.Revoked > l.Accounts:
		return fmt.Errorf("--revoked-accounts must be between 0 and --accounts minus --fault-accounts (%d)", l.Accounts-l.Faults)
	case l.RevokeAfter < 0:
		return errors.New("--revoke-after must not be negative")
	case l.Accounts == 0 && l.File != "":
		return errors.New("--accounts-file needs --accounts")
	}
	return nil
}

// AccountLine is one account as the simulator serves it: a line of the
// accounts file.
type AccountLine struct {
	Name              string `json:"name"`
	APIURL            string `json:"api_url"`
	Token             string `json:"token,omitempty"`
	OAuthTokenURL     string `json:"oauth_token_url,omitempty"`
	OAuthClientID     string `json:"oauth_client_id,omitempty"`
	OAuthClientSecret string `json:"oauth_client_secret,omitempty"`
	OAuthRefreshToken string `json:"oauth_refresh_token,omitempty"`
	Users             int    `json:"users"`
	Faults            bool   `json:"faults,omitempty"`
	Revoked           bool   `json:"revoked,omitempty"`
	RevokeAfter       int    `json:"revoke_after,omitempty"`
}

// FleetOptions lays the accounts out by position: the large ones first and
// the OAuth ones after them; the fault ones last and the revoked ones just
// before them. validate keeps each end's groups apart; a group from the
// start may overlap one from the end when there are few accounts.
func (l FleetLayout) FleetOptions(o Options) FleetOptions {
	fo := FleetOptions{Seed: o.Seed, Default: &o, Logger: o.Logger}
	healthy := Knobs{PageSizeCap: o.PageSizeCap, RateLimit: o.RateLimit, Churn: o.Churn}
	width := max(3, len(fmt.Sprint(l.Accounts)))
	for i := range l.Accounts {
		name := fmt.Sprintf("acct_%0*d", width, i+1)
		ao := AccountOptions{Name: name, Options: Options{Users: l.Users, TokenTTL: o.TokenTTL, Knobs: healthy}}
		if i < l.Large {
			ao.Users = l.LargeUsers
		}
		if i >= l.Large && i < l.Large+l.OAuth {
			tok := AccountToken(o.Seed, name)
			ao.ClientID, ao.ClientSecret, ao.RefreshToken = "usersync-sim", "cs-"+tok, "rt-"+tok
		}
		if i >= l.Accounts-l.Faults {
			ao.Knobs = o.Knobs
		}
		if i >= l.Accounts-l.Faults-l.Revoked && i < l.Accounts-l.Faults {
			ao.Revoked, ao.RevokeAfter = l.RevokeAfter == 0, l.RevokeAfter
		}
		fo.Accounts = append(fo.Accounts, ao)
	}
	return fo
}

// AccountLines describes the fleet's accounts for a script to register.
func (l FleetLayout) AccountLines(baseURL string, fo FleetOptions, fleet *Fleet) []AccountLine {
	out := make([]AccountLine, 0, len(fo.Accounts))
	for i, a := range fleet.Accounts() {
		ao := fo.Accounts[i]
		sa := AccountLine{Name: a.Name, APIURL: baseURL + a.Path, Token: a.Token, Users: ao.Users,
			Faults: i >= l.Accounts-l.Faults, Revoked: ao.Revoked}
		if !ao.Revoked {
			sa.RevokeAfter = ao.RevokeAfter
		}
		if ao.ClientID != "" {
			sa.OAuthTokenURL = sa.APIURL + "/oauth/token"
			sa.OAuthClientID, sa.OAuthClientSecret, sa.OAuthRefreshToken = ao.ClientID, ao.ClientSecret, ao.RefreshToken
		}
		out = append(out, sa)
	}
	return out
}

// WriteAccountLines prints the accounts as JSON lines, or writes them to path
// (through a temporary file renamed into place, so a script waiting for the
// file never reads half of it).
func WriteAccountLines(stdout io.Writer, path string, accts []AccountLine) error {
	if path == "" {
		return encodeAccounts(stdout, accts)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".accounts-*")
	if err != nil {
		return fmt.Errorf("--accounts-file: %w", err)
	}
	// After the rename there is nothing left to remove: only a failure's
	// leftover is.
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := encodeAccounts(tmp, accts); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--accounts-file: writing: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--accounts-file: writing: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--accounts-file: %w", err)
	}
	return nil
}

func encodeAccounts(w io.Writer, accts []AccountLine) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, a := range accts {
		if err := enc.Encode(a); err != nil {
			return fmt.Errorf("encoding account %s: %w", a.Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the accounts: %w", err)
	}
	return nil
}

// simulator is what Serve serves: one dataset, or a fleet.
type simulator struct {
	handler http.Handler
	stats   func() Stats
	fleet   *Fleet
	fo      FleetOptions
}

func newSimulator(o Options, l FleetLayout) simulator {
	if l.Accounts == 0 {
		sim := New(o)
		return simulator{handler: sim, stats: sim.Stats}
	}
	fo := l.FleetOptions(o)
	fleet := NewFleet(fo)
	return simulator{handler: fleet, stats: fleet.Stats, fleet: fleet, fo: fo}
}

// Serve serves the simulated API of o, and of l's accounts (whose lines go
// to stdout, or to l.File), on ln until ctx ends; it logs to o.Logger.
func Serve(ctx context.Context, ln net.Listener, stdout io.Writer, o Options, l FleetLayout) error {
	start := time.Now()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sim := newSimulator(o, l)
	url := "http://" + ln.Addr().String()
	if sim.fleet != nil {
		if err := WriteAccountLines(stdout, l.File, l.AccountLines(url, sim.fo, sim.fleet)); err != nil {
			_ = ln.Close()
			return err
		}
	}
	srv := &http.Server{Handler: sim.handler, ReadHeaderTimeout: 10 * time.Second}
	o.Logger.Info("simulated API listening", "addr", ln.Addr().String(), "url", url,
		"users", o.Users, "seed", o.Seed, "accounts", l.Accounts, "startup_ms", time.Since(start).Milliseconds())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping: %w", err)
	}
	st := sim.stats()
	o.Logger.Info("simulated API stopped", "requests", st.Requests, "rate_limited", st.RateLimited)
	return nil
}

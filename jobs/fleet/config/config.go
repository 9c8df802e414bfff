// Package config is usersync's settings: the table of every setting (its
// variable, flag, default, scope, meaning and parser), the Config they make
// from the environment and the command line, and a registered account's
// Config, the fleet's with the account's own values applied.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/usersync/usersync/sync/warehouse/dsn"
)

// Load builds the Config: defaults, then the environment lookup reads (and
// the _FILE variants of secrets), then flags, the settings' flags given on
// the command line by name (without the dashes) with their text. Every
// error names the variable or flag and says what is wrong, on one line.
func Load(lookup func(string) (string, bool), flags map[string]string) (Config, error) {
	getenv := func(k string) string { v, _ := lookup(k); return v }
	var c Config
	sources := map[string]string{}
	for _, s := range Settings() {
		v, source := s.Default, s.Env
		if ev, ok := lookupEnv(getenv, s.Env); ok {
			v = ev
		} else if ev, set := lookup(s.Env); set && s.EmptyIsValue {
			v = ev // USERSYNC_READER_ROLE= skips the role, as its meaning says
		}
		if s.Secret || s.File {
			fv, ok, err := readSecretFile(getenv, s.Env)
			if err != nil {
				return Config{}, err
			}
			if ok {
				v, source = fv, s.Env+"_FILE"
			}
		}
		if fv, ok := flags[s.Flag]; ok && s.Flag != "" {
			v, source = fv, "--"+s.Flag
		}
		if err := s.apply(&c, v, source); err != nil {
			return Config{}, err
		}
		sources[s.Env] = source
	}
	if _, given := flags["database-url"]; given && dsn.HasPassword(c.DatabaseURL) {
		return Config{}, errors.New("--database-url holds a password, which other local users see in ps and shells keep in their history; give it in DATABASE_URL or DATABASE_URL_FILE (or PGPASSWORD, or a password file) instead")
	}
	if err := checkSchemaName(c); err != nil {
		return Config{}, fmt.Errorf("%s %w", sources["USERSYNC_SCHEMA"], err)
	}
	if err := resolveResponseMemory(&c); err != nil {
		return Config{}, fmt.Errorf("%s %w", sources["USERSYNC_MAX_RESPONSE_MEMORY"], err)
	}
	return withPolicy(c, sources)
}

// apply sets s in c to v, which came from source; the error names source
// and never echoes a secret.
func (s Setting) apply(c *Config, v, source string) error {
	if err := s.set(c, v); err != nil {
		if s.Secret {
			return fmt.Errorf("%s is invalid", source)
		}
		return fmt.Errorf("%s %w", source, err)
	}
	return nil
}

// withPolicy checks c's schedules and returns c with its personal-data
// policy built; sources names where each setting came from, for the error.
func withPolicy(c Config, sources map[string]string) (Config, error) {
	if _, err := parseSchedules(c, sources); err != nil {
		return Config{}, err
	}
	p, err := buildPolicy(c, sources)
	if err != nil {
		return Config{}, err
	}
	c.PII = p
	return c, nil
}

// resolveResponseMemory sets an unset USERSYNC_MAX_RESPONSE_MEMORY to twice
// USERSYNC_MAX_RESPONSE_BYTES, and refuses one below it: a body as large as
// allowed could never be read.
func resolveResponseMemory(c *Config) error {
	switch {
	case c.MaxResponseMemory == 0:
		c.MaxResponseMemory = 2 * c.MaxResponseBytes
	case c.MaxResponseMemory < c.MaxResponseBytes:
		return fmt.Errorf("must be at least USERSYNC_MAX_RESPONSE_BYTES (%s), not %s",
			formatBytes(c.MaxResponseBytes), formatBytes(c.MaxResponseMemory))
	}
	return nil
}

// lookupEnv treats an empty variable as unset, the way most deploy tools
// render an unset value; Load makes the exception of the settings whose
// empty value means something (Setting.EmptyIsValue).
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func readSecretFile(getenv func(string) string, env string) (string, bool, error) {
	path, ok := lookupEnv(getenv, env+"_FILE")
	if !ok {
		return "", false, nil
	}
	if _, both := lookupEnv(getenv, env); both {
		return "", false, fmt.Errorf("%s and %s_FILE are both set; set only one", env, env)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", false, fmt.Errorf("%s_FILE: reading %s: %w", env, path, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", false, fmt.Errorf("%s_FILE: %s is empty", env, path)
	}
	return v, true, nil
}

// RequireDatabase checks the settings every database command needs.
func (c Config) RequireDatabase() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set: give the warehouse's PostgreSQL URL (make demo and make test start a throwaway one)")
	}
	return nil
}

// RequireAPI checks the settings every command that calls the API needs.
func (c Config) RequireAPI() error {
	if c.APIURL == "" {
		return errors.New("USERSYNC_API_URL is not set: give the API's base URL, without /api/v2")
	}
	if err := ValidateAPIURL(c.APIURL, c.AllowInsecureHTTP); err != nil {
		return fmt.Errorf("USERSYNC_API_URL %w", err)
	}
	oauth := c.OAuthTokenURL != "" || c.OAuthClientID != "" || c.OAuthClientSecret != "" || c.OAuthRefreshToken != ""
	switch {
	case oauth && c.APIToken != "":
		return errors.New("USERSYNC_API_TOKEN and USERSYNC_OAUTH_* are both set; use one way to authenticate")
	case oauth:
		// The refresh token may be the one usersync auth login stored:
		// the CLI's API client (newAPIClient) checks that one of the two exists.
		return c.RequireOAuthClient()
	case c.APIToken == "":
		return errors.New("USERSYNC_API_TOKEN is not set (or configure OAuth with USERSYNC_OAUTH_TOKEN_URL and friends)")
	}
	return nil
}

// RequireOAuthClient checks the OAuth client's settings: the token URL,
// client id and secret, and the authorize URL, given or derived.
func (c Config) RequireOAuthClient() error {
	if c.APIToken != "" {
		return errors.New("USERSYNC_API_TOKEN and USERSYNC_OAUTH_* are both set; use one way to authenticate")
	}
	for _, m := range []struct{ name, v string }{
		{"USERSYNC_OAUTH_TOKEN_URL", c.OAuthTokenURL}, {"USERSYNC_OAUTH_CLIENT_ID", c.OAuthClientID},
		{"USERSYNC_OAUTH_CLIENT_SECRET", c.OAuthClientSecret},
	} {
		if m.v == "" {
			return fmt.Errorf("%s is not set (OAuth needs the token URL, client id and client secret)", m.name)
		}
	}
	if err := validateOAuthURL(c.OAuthTokenURL, c.AllowInsecureHTTP); err != nil {
		return fmt.Errorf("USERSYNC_OAUTH_TOKEN_URL %w", err)
	}
	if c.OAuthAuthorizeURL != "" {
		if err := validateOAuthURL(c.OAuthAuthorizeURL, c.AllowInsecureHTTP); err != nil {
			return fmt.Errorf("USERSYNC_OAUTH_AUTHORIZE_URL %w", err)
		}
	}
	return nil
}

// validateOAuthURL checks an OAuth endpoint as ValidateAPIURL checks the
// API's URL, except for the /api/v2 rule.
func validateOAuthURL(raw string, allowInsecure bool) error {
	if err := ValidateAPIURL(raw, allowInsecure); err != nil && !strings.Contains(err.Error(), "/api/v2") {
		return err
	}
	return nil
}

// AuthorizeURL is USERSYNC_OAUTH_AUTHORIZE_URL, or the token URL with its
// last path segment replaced by authorize.
func (c Config) AuthorizeURL() string {
	if c.OAuthAuthorizeURL != "" {
		return c.OAuthAuthorizeURL
	}
	u, err := url.Parse(c.OAuthTokenURL)
	if err != nil {
		return ""
	}
	dir, _ := path.Split(strings.TrimRight(u.Path, "/"))
	u.Path, u.RawPath, u.RawQuery, u.Fragment = dir+"authorize", "", "", ""
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u.String()
}

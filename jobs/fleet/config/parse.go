package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/snapshot"
)

// CheckSnapshotDir checks the form of a snapshot destination at start, so a
// bad bucket name fails now rather than at the first snapshot.
// A value that starts like a URL (a scheme and a colon) is one: only
// s3:// and file:// are taken, so s3:/id:pw@bucket is refused rather than
// written to a local folder of that name; a folder whose first part holds
// a colon is written ./like:this. Credentials (an '@' before the path) are
// refused in every URL, file:// included. No error quotes the value.
func CheckSnapshotDir(v string) error {
	if v == "off" {
		return nil
	}
	if scheme, ok := urlScheme(v); ok {
		rest, slashes := strings.CutPrefix(v[len(scheme)+1:], "//")
		authority, _, _ := strings.Cut(rest, "/")
		switch {
		case slashes && strings.Contains(authority, "@"), !slashes && strings.Contains(v, "@"):
			return errors.New("holds credentials; use USERSYNC_S3_ACCESS_KEY_ID and USERSYNC_S3_SECRET_ACCESS_KEY (or the instance role) instead")
		case !slashes:
			return fmt.Errorf("starts with %q, like a URL, but is neither s3://bucket/prefix nor file:///path (write a folder whose name holds a colon as ./%s…)", scheme+":", scheme)
		}
	}
	err := snapshot.CheckDestination(v)
	if errors.Is(err, snapshot.ErrCredentialsInURL) {
		return errors.New("holds credentials; use USERSYNC_S3_ACCESS_KEY_ID and USERSYNC_S3_SECRET_ACCESS_KEY (or the instance role) instead")
	}
	return err
}

// urlScheme returns the scheme of a value that starts like a URL (RFC 3986:
// a letter, then letters, digits, '+', '-' or '.', then ':'). One letter is
// taken for a Windows drive, not a scheme.
func urlScheme(v string) (string, bool) {
	i := strings.IndexByte(v, ':')
	if i < 2 {
		return "", false
	}
	for j, r := range v[:i] {
		letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		other := (r >= '0' && r <= '9') || r == '+' || r == '-' || r == '.'
		if !letter && (j == 0 || !other) {
			return "", false
		}
	}
	return v[:i], true
}

// checkSchedule checks a schedule's form; Load checks its @every
// interval against USERSYNC_SCHEDULE_MIN_INTERVAL once every setting is read.
func checkSchedule(v string) error {
	if _, err := jobs.ParseSchedule("", v, 0); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), " "))
	}
	return nil
}

// parseHosts reads a comma-separated list of host names, lower-cased; a
// port or a scheme is refused.
func parseHosts(dst *[]string, v string) error {
	var hosts []string
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if h == "" {
			continue
		}
		if strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" || strings.HasPrefix(h, ".") || strings.Contains(h, "..") {
			return fmt.Errorf("must be host names separated by commas, without ports or schemes, not %q", v)
		}
		hosts = append(hosts, h)
	}
	*dst = hosts
	return nil
}

func validateAddr(v string) error {
	if v == "off" {
		return nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("must be host:port (like 127.0.0.1:9090) or off, not %q", v)
	}
	return nil
}

func parseBool(dst *bool, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false, not %q", v)
	}
	*dst = b
	return nil
}

func parseInt(dst *int, v string, lo, hi int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return fmt.Errorf("must be a whole number between %d and %d, not %q", lo, hi, v)
	}
	*dst = n
	return nil
}

// parseBytes reads a size: whole bytes, or a whole number of KiB, MiB or
// GiB. Decimal units (KB, MB) are refused rather than guessed at.
func parseBytes(dst *int64, v string, lo, hi int64) error {
	s := strings.TrimSpace(v)
	unit := int64(1)
	for suffix, u := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			s, unit = strings.TrimSpace(n), u
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo/unit || n > hi/unit || n*unit < lo {
		return fmt.Errorf("must be a size between %s and %s (bytes, or a whole number with KiB, MiB or GiB, like 64MiB), not %q",
			formatBytes(lo), formatBytes(hi), v)
	}
	*dst = n * unit
	return nil
}

// formatBytes writes a size with the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkSchemaName refuses schema names that are, or could be, another
// deployment's: <name>_river holds the job tables of the deployment whose
// schema is <name>, and public is everyone's. Its errors are completed with
// the source of USERSYNC_SCHEMA by Load.
func checkSchemaName(c Config) error {
	return schemaNameError(c, ", or set USERSYNC_SCHEMA_FORCE=true if it is this deployment's own")
}

// checkAccountSchemaName is checkSchemaName for a registered account, whose
// schema is made for it and so never forced: its errors point to another
// name, not to USERSYNC_SCHEMA_FORCE, which does not apply.
func checkAccountSchemaName(c Config) error {
	return schemaNameError(c, " for the account (USERSYNC_SCHEMA_FORCE applies to the default account only: an account's schema is always its own)")
}

// schemaNameError is checkSchemaName's refusal, hint saying what else to do.
func schemaNameError(c Config, hint string) error {
	switch {
	case c.SchemaForce:
		return nil
	case strings.HasSuffix(c.Schema, "_river"):
		return fmt.Errorf("%q ends in _river, the suffix of River's job schemas (another deployment's may be there); choose another name%s", c.Schema, hint)
	case c.Schema == "public":
		return fmt.Errorf(`"public" is the database's shared schema; choose a schema of usersync's own%s`, hint)
	}
	return nil
}

func parseDuration(dst *time.Duration, v string, lo, hi time.Duration) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < lo || d > hi {
		return fmt.Errorf("must be a duration between %s and %s (like 10m or 1h30m), not %q", lo, hi, v)
	}
	*dst = d
	return nil
}

// parseAge parses a number of days ("30d") or a duration ("36h"), from 0
// to maxDays days.
func parseAge(dst *time.Duration, v string, maxDays int) error {
	t := strings.TrimSpace(v)
	d, err := time.ParseDuration(t)
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, perr := strconv.Atoi(days)
		d, err = time.Duration(n)*24*time.Hour, perr
		if n > maxDays {
			err = errors.New("too long")
		}
	}
	if err != nil || d < 0 || d > time.Duration(maxDays)*24*time.Hour {
		return fmt.Errorf("must be a number of days (like 30d) or a duration, from 0 to %dd, not %q", maxDays, v)
	}
	*dst = d
	return nil
}

func parseEnum(dst *string, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("must be one of %s, not %q", strings.Join(allowed, ", "), v)
}

// setAPIURL sets the API base URL, refusing one that could carry a
// credential (a query, a fragment or userinfo), since the URL is printed
// by accounts list and show and logged; the error never echoes it.
func setAPIURL(c *Config, v string) error {
	u, err := url.Parse(v)
	if strings.ContainsAny(v, "?#") || (strings.Contains(v, "@") && (err != nil || u.User != nil)) {
		return errors.New("must hold no query string, fragment or user:password (secrets go in USERSYNC_API_TOKEN_FILE, or --api-token-file for accounts add and set)")
	}
	c.APIURL = strings.TrimRight(v, "/")
	return nil
}

// PrintableURL is raw as printed for an account stored before setAPIURL
// refused credentials: its userinfo, query and fragment replaced by
// REDACTED, and a URL that does not parse by a placeholder.
func PrintableURL(raw string) string {
	if !strings.ContainsAny(raw, "?#@") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(not a valid URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery = "REDACTED"
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = "REDACTED", ""
	}
	return u.String()
}

// ValidateAPIURL checks the API base URL: absolute, https unless the host is
// loopback or insecure HTTP was allowed, no credentials in it.
func ValidateAPIURL(raw string, allowInsecure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("must be an absolute http(s) URL like https://api.example.com")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials; use USERSYNC_API_TOKEN or OAuth")
	}
	if strings.HasSuffix(u.Path, "/api/v2") {
		return fmt.Errorf("must be the base URL without /api/v2")
	}
	if u.Scheme == "http" && !allowInsecure && !IsLoopback(u.Hostname()) {
		return fmt.Errorf("uses http:// on a non-loopback host; use https:// or set USERSYNC_ALLOW_INSECURE_HTTP=true")
	}
	return nil
}

// IsLoopback says whether host names this machine: localhost or a
// loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

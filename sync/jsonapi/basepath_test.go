package jsonapi

import (
	"errors"
	"net/url"
	"path"
	"strings"
	"testing"
)

// basePathCases are next links checked against the base URL
// https://api.example.com/accounts/a (and its variants), with what the
// client must do: follow them (ok) or refuse them.
var basePathCases = []struct {
	name, base, link string
	ok               bool
}{
	// Accepted, as before accounts shared a host.
	{"under the prefix", "", "https://api.example.com/accounts/a/api/v2/users?page%5Bafter%5D=x&sort=updatedAt", true},
	{"host in capitals", "", "https://API.example.com/accounts/a/api/v2/users", true},
	{"default port written", "", "https://api.example.com:443/accounts/a/api/v2/users", true},
	{"default port in the base", "https://api.example.com:443/accounts/a", "https://api.example.com/accounts/a/api/v2/users", true},
	{"the base itself", "", "https://api.example.com/accounts/a", true},
	{"the base with a slash", "", "https://api.example.com/accounts/a/", true},
	{"base with a trailing slash", "https://api.example.com/accounts/a/", "https://api.example.com/accounts/a/api/v2/users?page=2", true},
	{"an encoded slash past the prefix", "", "https://api.example.com/accounts/a/api/v2/users/a%2Fb", true},
	{"relative: query only", "", "?page%5Bafter%5D=y", true},
	{"relative: path", "", "users?page=3", true},
	{"relative: rooted", "", "/accounts/a/api/v2/users?page=3", true},
	{"relative: up within the prefix", "", "../../v2/users?page=3", true},
	{"root base: any path", "https://api.example.com", "https://api.example.com/accounts/b/api/v2/users", true},
	{"root base with a slash", "https://api.example.com/", "https://api.example.com/api/v2/users", true},

	// Refused: another origin (as before).
	{"other host", "", "https://evil.example/accounts/a/api/v2/users", false},
	{"other port", "", "https://api.example.com:8443/accounts/a/api/v2/users", false},
	{"other scheme", "", "http://api.example.com/accounts/a/api/v2/users", false},

	// Refused: off the base path.
	{"another account", "", "https://api.example.com/accounts/b/api/v2/users?page%5Bafter%5D=x&access_token=" + secretAccess, false},
	{"a longer name", "", "https://api.example.com/accounts/ab/api/v2/users", false},
	{"above the prefix", "", "https://api.example.com/accounts", false},
	{"the root", "", "https://api.example.com/", false},
	{"no path", "", "https://api.example.com", false},
	{"the unprefixed API", "", "https://api.example.com/api/v2/users", false},
	{"another case", "", "https://api.example.com/Accounts/a/api/v2/users", false},
	{"a doubled slash", "", "https://api.example.com//accounts/a/api/v2/users", false},
	{"relative: another account", "", "/accounts/b/api/v2/users", false},
	{"relative: up and out", "", "../../../b/api/v2/users", false},
	{"dot-dot", "", "https://api.example.com/accounts/a/../b/api/v2/users", false},
	{"dot-dot back in", "", "https://api.example.com/accounts/b/../a/api/v2/users", false},
	{"dot", "", "https://api.example.com/accounts/a/./api/v2/users", false},
	{"encoded dot-dot", "", "https://api.example.com/accounts/a/%2e%2e/b/api/v2/users", false},
	{"half-encoded dot-dot", "", "https://api.example.com/accounts/a/%2E./b/api/v2/users", false},
	{"encoded slash and dot-dot", "", "https://api.example.com/accounts/a%2f..", false},
	{"encoded slash, dot-dot, slash", "", "https://api.example.com/accounts/a%2f..%2fb/api/v2/users", false},
	{"encoded slash in the prefix", "", "https://api.example.com/accounts/a%2fb/api/v2/users", false},
	{"an encoded letter in the prefix", "", "https://api.example.com/accounts/%61/api/v2/users", false},
	{"encoded backslash", "", "https://api.example.com/accounts/a/x%5c..%5c..%5cb/api/v2/users", false},
	{"backslash", "", `https://api.example.com/accounts/a/..\b/api/v2/users`, false},
	{"path parameter", "", "https://api.example.com/accounts/a/..;x/b/api/v2/users", false},
	{"double-encoded dot-dot", "", "https://api.example.com/accounts/a/%252e%252e/b/api/v2/users", false},
	{"root base: dot-dot", "https://api.example.com", "https://api.example.com/x/../api/v2/users", false},
}

// TestNextLinkUnderBasePath: with many accounts under one
// host by path, a next link is followed only when it stays under the base
// URL's path, segment by segment, whatever dot segments or encodings it
// tries; every form accepted before is still accepted. The refusal names
// the link's host and path on one line, never a token.
func TestNextLinkUnderBasePath(t *testing.T) {
	t.Parallel()
	ref, err := url.Parse("https://api.example.com/accounts/a/api/v2/users?page%5Bafter%5D=x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range basePathCases {
		base := tc.base
		if base == "" {
			base = "https://api.example.com/accounts/a"
		}
		c := newClient(t, base, newFakeClock(t), nil)
		got, err := c.checkLink(tc.link, ref)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %s refused: %v", tc.name, tc.link, err)
			} else if u, perr := url.Parse(got); perr != nil || !u.IsAbs() {
				t.Errorf("%s: checked link %q is not absolute", tc.name, got)
			}
			continue
		}
		var nle *NextLinkError
		if !errors.As(err, &nle) {
			t.Errorf("%s: %s gave %q, %v; want a *NextLinkError", tc.name, tc.link, got, err)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, secretAccess) || strings.ContainsAny(msg, "\r\n") {
			t.Errorf("%s: error leaks the token or spans lines: %q", tc.name, msg)
		}
		if u, _ := url.Parse(tc.link); u != nil && u.Host != "" && !strings.Contains(msg, u.Host) {
			t.Errorf("%s: error does not name the link's host: %q", tc.name, msg)
		}
	}
}

// TestNextLinkRefusalMessage: the error names the link's host and path and
// the base URL's path.
func TestNextLinkRefusalMessage(t *testing.T) {
	t.Parallel()
	c := newClient(t, "https://api.example.com/accounts/a", newFakeClock(t), nil)
	_, err := c.checkLink("https://api.example.com/accounts/b/api/v2/users?page%5Bafter%5D=x&token="+secretAccess, nil)
	want := "refusing next link https://api.example.com/accounts/b/api/v2/users?page%5Bafter%5D=x&REDACTED: " +
		"its path is not under the base URL's path /accounts/a"
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

// FuzzCheckLink: whatever link a server sends, the client either refuses it
// with a one-line *NextLinkError or follows a URL on the base URL's origin
// whose path stays under the base URL's path however a server reads it:
// as sent, percent-decoded once or twice, with "\" as "/", dot segments
// resolved or not.
func FuzzCheckLink(f *testing.F) {
	for _, tc := range basePathCases {
		f.Add(tc.link)
	}
	const base = "https://api.example.com/accounts/a"
	c, err := NewClient(Options{BaseURL: base, Auth: StaticToken(secretAccess)})
	if err != nil {
		f.Fatal(err)
	}
	ref, err := url.Parse(base + "/api/v2/users")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, link string) {
		got, err := c.checkLink(link, ref)
		if err != nil {
			var nle *NextLinkError
			if !errors.As(err, &nle) || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("checkLink(%q) = %v; want a one-line *NextLinkError", link, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil || !strings.EqualFold(u.Hostname(), "api.example.com") || u.Scheme != "https" || u.User != nil {
			t.Fatalf("checkLink(%q) = %q, off the base URL's origin", link, got)
		}
		for _, p := range readings(u.EscapedPath()) {
			if p != "/accounts/a" && !strings.HasPrefix(p, "/accounts/a/") {
				t.Fatalf("checkLink(%q) = %q, whose path a server may read as %q", link, got, p)
			}
		}
	})
}

// readings returns the paths a server may route escaped to: as sent, then
// percent-decoded once and twice, each with "\" read as "/" or not, and
// each with its dot segments resolved or not.
func readings(escaped string) []string {
	var out []string
	p := escaped
	for range 3 {
		for _, q := range []string{p, strings.ReplaceAll(p, `\`, "/")} {
			out = append(out, q, path.Clean(q))
		}
		dec, err := url.PathUnescape(p)
		if err != nil {
			break
		}
		p = dec
	}
	return out
}

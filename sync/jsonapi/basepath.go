package jsonapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/usersync/usersync/sync/jsondoc"
)

// outsideBase returns why u, a URL on the base URL's origin, may reach a
// path that is not under basePath (the base URL's path as sent, without
// its trailing slash), or "" when it cannot. Many accounts can be served
// by path on one host (https://h/accounts/a and https://h/accounts/b): a
// link off the prefix would carry this account's token to another account
// and mix that account's data into this warehouse.
//
// The prefix is matched segment by segment (/accounts/a admits
// /accounts/a/... but not /accounts/ab), on the segments as they are sent:
// a server may route on them decoded or not, so /accounts/%61 and
// /accounts/a%2fb are refused. A link holding a dot segment anywhere is
// refused, whatever it resolves to: servers differ on whether they resolve
// ".", "..", their encoded forms, "..;" or an encoded slash before they
// route, and one that routes first takes /accounts/b/../a to b.
func outsideBase(basePath string, u *url.URL) string {
	base := strings.Split(basePath, "/")
	segs := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segs {
		if dotSegment(seg) {
			return "its path holds a dot segment (., .. or an encoded form)"
		}
		if i < len(base) && seg != base[i] {
			return notUnder(basePath)
		}
	}
	if len(segs) < len(base) {
		return notUnder(basePath)
	}
	return ""
}

func notUnder(basePath string) string {
	if basePath == "" {
		basePath = "/"
	}
	return "its path is not under the base URL's path " + jsondoc.OneLine(basePath)
}

// dotSegment reports whether seg, one segment of a path as sent, is or
// holds a dot segment as some server may read it: percent-decoded once or
// twice, split at "/" or "\" (decoded from %2f or %5c, or Windows'), and cut
// at ";" (path parameters: Tomcat reads "..;x" as "..").
func dotSegment(seg string) bool {
	for range 3 {
		for piece := range strings.FieldsFuncSeq(seg, func(r rune) bool { return r == '/' || r == '\\' }) {
			piece, _, _ = strings.Cut(piece, ";")
			if piece == "." || piece == ".." {
				return true
			}
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == seg {
			return false
		}
		seg = dec
	}
	return false
}

// sameOrigin reports whether u is on the base URL's origin: scheme, host
// (in any case) and port, a scheme's default port written or not.
func (c *Client) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(origin(u), origin(c.base))
}

// underBaseRedirects makes c, a copy from sameOriginRedirects, also refuse
// a redirect within the origin to a path that is not under basePath
// (outsideBase): the redirected request carries the bearer token as a next
// link does.
func underBaseRedirects(c *http.Client, basePath string) *http.Client {
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := next(req, via); err != nil {
			return err
		}
		if why := outsideBase(basePath, req.URL); why != "" {
			return &RedirectError{From: originAndPath(via[0].URL), To: originAndPath(req.URL), Reason: why}
		}
		return nil
	}
	return c
}

// originAndPath is u without userinfo, query or fragment, on one line.
func originAndPath(u *url.URL) string {
	return jsondoc.OneLine(origin(u) + u.EscapedPath())
}

package jsonapi

import (
	"net/url"
	"slices"
	"strings"
)

// sanitizeURL returns raw without userinfo and with the value of every
// secret-looking query parameter replaced by REDACTED. The other parameters
// keep their raw form. A URL that does not parse is reduced to a placeholder.
func sanitizeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	return u.String()
}

// redactQuery redacts the values of secret-looking parameters in a raw query.
func redactQuery(rawQuery string) string {
	parts := strings.Split(rawQuery, "&")
	changed := false
	for i, part := range parts {
		name, _, hasValue := strings.Cut(part, "=")
		if unescaped, err := url.QueryUnescape(name); err == nil {
			name = unescaped
		}
		if hasValue && looksSecret(name) {
			parts[i] = part[:strings.IndexByte(part, '=')+1] + "REDACTED"
			changed = true
		}
	}
	if !changed {
		return rawQuery
	}
	return strings.Join(parts, "&")
}

// looksSecret reports whether a query parameter name looks like it holds a
// secret (token, access_token, refresh_token, client_secret, key, password...).
func looksSecret(name string) bool {
	name = strings.ToLower(name)
	for _, w := range [...]string{"token", "secret", "key", "password", "passwd", "signature", "credential"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// credentialParams are the query parameters CheckpointURL removes, compared
// case-insensitively; parameters starting with x-amz- (a presigned URL's
// signature and credential) go too.
var credentialParams = []string{"access_token", "token", "id_token", "refresh_token", "api_key", "apikey", "key",
	"client_secret", "secret", "password", "passwd", "code", "signature", "sig", "auth", "authorization"}

// CheckpointURL returns a next link fit to be stored as a run's checkpoint,
// where others may read it: without userinfo, fragment, or a query parameter
// that carries a credential (credentialParams). The client authenticates
// with its own header, so a link resumed without them still works. Other
// parameters (the cursor) keep their raw form.
func CheckpointURL(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	var kept []string
	for part := range strings.SplitSeq(u.RawQuery, "&") {
		name, _, _ := strings.Cut(part, "=")
		if unescaped, err := url.QueryUnescape(name); err == nil {
			name = unescaped
		}
		name = strings.ToLower(name)
		if part != "" && !slices.Contains(credentialParams, name) && !strings.HasPrefix(name, "x-amz-") {
			kept = append(kept, part)
		}
	}
	u.RawQuery = strings.Join(kept, "&")
	return u.String()
}

// requestURI returns the path and query of a (sanitized) URL, for one-line
// messages such as "GET /api/v2/users?count=false: ...".
func requestURI(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.RequestURI()
}

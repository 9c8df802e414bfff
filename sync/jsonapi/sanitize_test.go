package jsonapi

import (
	"strings"
	"testing"
)

// hostileParams are parameters a server may add to a next link, none of
// which the client sends: each must go from a stored checkpoint and from
// logs and errors, whatever its name.
var hostileParams = []string{"accessToken", "auth_token", "oauth_token", "x-api-key", "access_token%00", "session", "jwt",
	"X-Amz-Signature", "client_secret", "Page[after]", "filter[a.b]", "fields[]", "filter[role][name]", "filter[x]junk"}

// TestCheckpointURL: the checkpoint is the collection URL rebuilt on the
// configured base URL (path prefix included) with only the parameters the
// client sends, re-encoded: the cursor and the filters stay; the link's
// host, path, userinfo and fragment, and every other parameter, go.
func TestCheckpointURL(t *testing.T) {
	t.Parallel()
	c := newClient(t, "https://api.example.com/prefix", newFakeClock(t), nil)
	const want = "https://api.example.com/prefix/api/v2/users?count=false&filter%5BupdatedAt%5D=2026-01-01T00%3A00%3A00.000Z..inf&" +
		"page%5Bafter%5D=abc%3D&page%5Bsize%5D=100&provideDataConnections=true&sort=updatedAt%2Cid"
	const query = "filter%5BupdatedAt%5D=2026-01-01T00:00:00.000Z..inf&page[size]=100&page%5Bafter%5D=abc%3D&sort=updatedAt,id&provideDataConnections=true"
	var hostile strings.Builder
	for _, name := range hostileParams {
		hostile.WriteString("&" + name + "=S3CRET")
	}
	for _, link := range []string{
		"https://api.example.com/prefix/api/v2/users?" + query,
		"https://api.example.com/prefix/api/v2/users?" + query + hostile.String() + "&S3CRET&=S3CRET&page[after]=second#S3CRET",
		"https://u:S3CRET@evil.example:8443/S3CRET/users?S3CRET=1&" + query,
		"/relative/S3CRET?" + query + "&filter[id]=%zz",
	} {
		got, err := c.CheckpointURL("users", link)
		if err != nil || got != want {
			t.Errorf("CheckpointURL(%q)\n = %q, %v\nwant %q", link, got, err, want)
		}
	}
	// A value usersync would not build, under a name it sends, is refused
	// (never stored), and the error does not show it.
	for _, bad := range []string{"count=false%00S3CRET", "filter%5BupdatedAt%5D=S3CRET", "sort=updatedAt,S3CRET%20x", "include=S3CRET.x",
		"page%5Bafter%5D=S3CRET%22%3E", "page[after]=" + strings.Repeat("S3CRET", 200), "page[size]=S3CRET", "fields[user]=a,S3CRET%3D"} {
		got, err := c.CheckpointURL("users", "https://api.example.com/prefix/api/v2/users?"+bad+"&"+query)
		if err == nil || got != "" || strings.Contains(err.Error(), "S3CRET") {
			t.Errorf("CheckpointURL with %s = %q, %v; want an error without the value", bad, got, err)
		}
	}
	if got, err := c.CheckpointURL("users", ""); got != "" || err != nil {
		t.Errorf(`CheckpointURL("") = %q, %v; want "" (the walk had ended)`, got, err)
	}
	if got, err := c.CheckpointURL("users", "https://api.example.com/%zz"); err == nil {
		t.Errorf("an unparsable link gave %q, want an error", got)
	}
}

// TestSanitizeURL: logs and errors keep the parameters the client sends
// and redact every other one, name and value, whatever it is called.
func TestSanitizeURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://u:p@h/a?x=1&token=abc&page%5Bsize%5D=5&count=false#frag", "https://h/a?REDACTED&REDACTED&page%5Bsize%5D=5&count=false"},
		{"https://h/a?refresh%5Ftoken=abc", "https://h/a?REDACTED"},
		{"https://h/a?filter%5BupdatedAt%5D=2026-11-22T10%3A15%3A00.123Z..inf&filter[teams][id]=1,2&fields[team]=&include=teams&sort=-id",
			"https://h/a?filter%5BupdatedAt%5D=2026-11-22T10%3A15%3A00.123Z..inf&filter[teams][id]=1,2&fields[team]=&include=teams&sort=-id"},
		{"https://h/a?page[after]=c1&page[offset]=10&provideAuthorizationMeta=true&provideDataConnections=true",
			"https://h/a?page[after]=c1&page[offset]=10&provideAuthorizationMeta=true&provideDataConnections=true"},
		{"%zz", "(unparsable URL)"},
		// Values the client would not build, under names it sends.
		{"https://h/a?filter%5BupdatedAt%5D=S3CRET&sort=-id,S3CRET%2B&page[after]=S3CRET%20x&count=S3CRET&fields[user]=&include=teams",
			"https://h/a?filter%5BupdatedAt%5D=REDACTED&sort=REDACTED&page[after]=REDACTED&count=REDACTED&fields[user]=&include=teams"},
	}
	for _, name := range hostileParams {
		tests = append(tests, struct{ in, want string }{"https://h/a?count=false&" + name + "=S3CRET", "https://h/a?count=false&REDACTED"})
	}
	for _, tt := range tests {
		if got := sanitizeURL(tt.in); got != tt.want {
			t.Errorf("sanitizeURL(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

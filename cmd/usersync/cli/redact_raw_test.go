package cli

import (
	"strings"
	"testing"
)

// TestDatabaseURLRawCharactersNeverShow: a password written with a raw '@',
// '#', '?', '/', ':' or '%' in a DATABASE_URL URL shows no part of itself in
// any warning or error, whichever way the driver splits the string (a raw
// '@' makes the password's tail the host; a raw '/' makes its head the port).
func TestDatabaseURLRawCharactersNeverShow(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"@", "#", "?", "/", ":", "%", "%zz", "@@"} {
		for _, host := range []string{"192.0.2.1:5432", "127.0.0.1:1"} {
			dsn := "postgres://usersync:hunter" + c + "secret9@" + host + "/analytics?connect_timeout=1"
			for _, cmd := range []string{"migrate", "status"} {
				_, out, errs := run(t, map[string]string{"DATABASE_URL": dsn, "USERSYNC_API_URL": "http://127.0.0.1:1",
					"USERSYNC_API_TOKEN": "x", "USERSYNC_ALLOW_INSECURE_HTTP": "true"}, cmd)
				if c == "@" && !strings.Contains(errs, "percent-encode it as %40") {
					t.Errorf("%s with a raw @: stderr %q", cmd, errs)
				}
				if strings.Contains(out+errs, "hunter") || strings.Contains(out+errs, "secret9") {
					t.Errorf("%s with password hunter%ssecret9 at %s: the password shows:\n%s", cmd, c, host, out+errs)
				}
			}
		}
	}
	// A user with an '@' (as some hosted databases name theirs) written raw.
	_, out, errs := run(t, map[string]string{"DATABASE_URL": "postgres://usersync@srv:hunter9secret@192.0.2.1/analytics?connect_timeout=1"}, "status")
	if strings.Contains(out+errs, "hunter") || strings.Contains(out+errs, "secret") {
		t.Errorf("user with a raw @: the password shows:\n%s", out+errs)
	}
}

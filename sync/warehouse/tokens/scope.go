package tokens

import (
	"fmt"
	"strings"
)

// ScopeLine words the scope a grant holds: "" when the token endpoint did
// not say. usersync only reads, so a scope that writes is worth a warning.
func ScopeLine(scope string) string {
	if scope == "" {
		return ""
	}
	if w := writeScopes(scope); len(w) > 0 {
		return fmt.Sprintf("%s: WARNING %s can change the API's data, which usersync never does; set USERSYNC_OAUTH_SCOPES to read scopes and run usersync auth login",
			scope, strings.Join(w, ", "))
	}
	return scope + " (read-only)"
}

// writeScopes returns the scopes whose action (the part after the last dot
// or colon, as in users.write) writes: write, delete or all.
func writeScopes(scope string) []string {
	var out []string
	for _, s := range strings.Fields(scope) {
		action := s[strings.LastIndexAny(s, ".:")+1:]
		switch strings.ToLower(action) {
		case "write", "delete", "all":
			out = append(out, s)
		}
	}
	return out
}

package cli

import (
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// TestAccountSchemaRefusalsDoNotSuggestForce: accounts add refuses a schema
// ending in _river or public even with USERSYNC_SCHEMA_FORCE=true (an
// account's schema is made for it, never another's), and says so instead
// of suggesting the setting it ignores; the default account's refusal still
// suggests it, and the setting still lets the default account through.
func TestAccountSchemaRefusalsDoNotSuggestForce(t *testing.T) {
	t.Parallel()
	pool := schematest.NewPool(t, 1)
	fleet := schematest.NewSchemaName(t, pool)
	for _, force := range []string{"", "true"} {
		env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": fleet, "USERSYNC_SCHEMA_FORCE": force,
			"USERSYNC_API_TOKEN": "x"}
		for _, schema := range []string{fleet + "_river", "public"} {
			code, _, errs := run(t, env, "accounts", "add", "us", "--api-url", "http://127.0.0.1:1", "--schema", schema)
			if code != ExitUsage || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "--schema") ||
				!strings.Contains(errs, "applies to the default account only") || strings.Contains(errs, "set USERSYNC_SCHEMA_FORCE") {
				t.Errorf("force %q, accounts add --schema %s: exit %d, stderr %q; want 2 and one line that does not suggest USERSYNC_SCHEMA_FORCE", force, schema, code, errs)
			}
		}
	}
	_, err := configFor(map[string]string{"USERSYNC_SCHEMA": "public"})
	if err == nil || !strings.Contains(err.Error(), "set USERSYNC_SCHEMA_FORCE=true") {
		t.Errorf("default account with schema public: %v", err)
	}
	if _, err := configFor(map[string]string{"USERSYNC_SCHEMA": "public", "USERSYNC_SCHEMA_FORCE": "true"}); err != nil {
		t.Errorf("default account with schema public, forced: %v", err)
	}
}

package cli

import (
	"context"
	"strings"
	"testing"
)

// TestWorkerRemedyNamesTheAccount: the remedy a worker logs for a refused
// credential (jobs.Deps.Remedy) is the account's own: the default account's,
// usersync auth login --account NAME for a registered OAuth account, and
// usersync accounts set NAME for a registered static token.
func TestWorkerRemedyNamesTheAccount(t *testing.T) {
	t.Parallel()
	f := newOAuthAccountFleet(t)
	cfg, err := configFor(f.env)
	if err != nil {
		t.Fatal(err)
	}
	e := env0{cfg}.env()
	ctx := context.Background()
	for name, want := range map[string]string{
		"default": "check USERSYNC_API_TOKEN",
		"oa":      "run usersync auth login --account oa",
		"eu":      "usersync accounts set eu --api-token-file",
	} {
		if got := remedyOf(ctx, e, name); !strings.Contains(got, want) {
			t.Errorf("a worker's remedy for account %s: %q, want it to hold %q", name, got, want)
		}
	}
}

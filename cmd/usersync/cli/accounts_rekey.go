package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/usersync/usersync/jobs/fleet/registry"
)

func accountsRekeyCommand() command {
	return command{
		name:    "accounts rekey",
		summary: "encrypt every stored secret again with USERSYNC_SECRETS_KEY (a rotation, or an earlier release's plain text)",
		details: `Encrypts every secret stored in PostgreSQL again with the key of
USERSYNC_SECRETS_KEY_FILE (or USERSYNC_SECRETS_KEY): the registered accounts'
secrets and every account's OAuth tokens (oauth_tokens). A value sealed with the
key of --old-key-file is opened with it; a value in plain text (stored by an
earlier release) is encrypted. Afterwards only the new key opens them: give it to
every worker. It stops at the first value it cannot open, naming it; run it again
once fixed (values already sealed with the new key open with it).`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			oldFile := fs.String("old-key-file", "", "a file holding the key the secrets are sealed with now, to be retired")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("usersync accounts rekey takes no argument, not %q", args[0])}
				}
				ring, err := (&registry.Fleet{Config: e.fleetConfig()}).Ring(*oldFile)
				if err != nil {
					return usageError{err}
				}
				return withFleet(ctx, e, 2, func(f *registry.Fleet) error {
					res, err := f.Rekey(ctx, ring)
					for _, c := range res.Accounts {
						fmt.Fprintf(e.stdout, "account %s: %d secret(s) sealed with key id %s\n", c.Name, c.N, ring[0].ID())
					}
					for _, c := range res.Schemas {
						fmt.Fprintf(e.stdout, "schema %s: %d OAuth credential(s) sealed with key id %s\n", c.Name, c.N, ring[0].ID())
					}
					return err
				})
			}
		},
	}
}

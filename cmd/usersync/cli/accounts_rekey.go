package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/secret"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
	"github.com/usersync/usersync/sync/warehouse/tokens"
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
				ring, err := rekeyRing(e, *oldFile)
				if err != nil {
					return usageError{err}
				}
				return withRegistryPool(ctx, e, func(pool *pgxpool.Pool, reg *accounts.Registry) error {
					return warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
						return rekey(ctx, e, pool, reg, ring)
					})
				})
			}
		},
	}
}

// rekeyRing is the new key, then the old one of --old-key-file, if given.
func rekeyRing(e *env, oldFile string) (secret.Ring, error) {
	key := e.fleetConfig().SecretsKey
	if key == nil {
		return nil, errors.New("set USERSYNC_SECRETS_KEY_FILE (or USERSYNC_SECRETS_KEY) to the new key (openssl rand -hex 32 > FILE)")
	}
	if oldFile == "" {
		return secret.Ring{key}, nil
	}
	raw, err := readOnce("old-key-file", oldFile)
	if err != nil {
		return nil, err
	}
	old, err := secret.ParseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("--old-key-file: %w", err)
	}
	return secret.Ring{key, old}, nil
}

// rekey seals every registered account's stored secrets, then every
// account's OAuth tokens, with ring's first key.
func rekey(ctx context.Context, e *env, pool *pgxpool.Pool, reg *accounts.Registry, ring secret.Ring) error {
	list, err := reg.List(ctx)
	if err != nil {
		return err
	}
	schemas := []string{e.fleetConfig().Schema}
	for _, a := range list {
		schemas = append(schemas, a.Schema())
		vals := map[string]string{}
		for k, v := range a.Settings {
			if !storedSecret(k) || v == "" {
				continue
			}
			at := secret.Bind("account", a.Name, k)
			plain, _, err := ring.Open(at, v)
			if err != nil {
				return rekeyError(a.Name, k, ring, err)
			}
			if vals[k], err = ring[0].Seal(at, plain); err != nil {
				return fmt.Errorf("account %s: sealing %s: %w", a.Name, k, err)
			}
		}
		if len(vals) == 0 {
			continue
		}
		if err := reg.UpdateSettings(ctx, a.Name, vals); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "account %s: %d secret(s) sealed with key id %s\n", a.Name, len(vals), ring[0].ID())
	}
	for _, s := range schemas {
		n, err := tokens.Rekey(ctx, pool, s, ring)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintf(e.stdout, "schema %s: %d OAuth credential(s) sealed with key id %s\n", s, n, ring[0].ID())
		}
	}
	return nil
}

// rekeyError says which keys were tried on a value that opened with none.
func rekeyError(name, setting string, ring secret.Ring, err error) error {
	var wk *secret.WrongKeyError
	if !errors.As(err, &wk) {
		return fmt.Errorf("account %s: stored %s: %w", name, setting, err)
	}
	old := "no --old-key-file"
	if len(ring) > 1 {
		old = "--old-key-file is key id " + ring[1].ID()
	}
	return fmt.Errorf("account %s: its secrets are sealed with key id %s; USERSYNC_SECRETS_KEY is key id %s, %s", name, wk.Sealed, ring[0].ID(), old)
}

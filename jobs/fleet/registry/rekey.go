package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/usersync/usersync/sync/secret"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

// Count is how many secrets Rekey sealed again in one account's row or one
// schema's oauth_tokens.
type Count struct {
	Name string
	N    int
}

// RekeyResult is what Rekey sealed again, account by account, then schema
// by schema; none is listed with nothing to seal.
type RekeyResult struct {
	Accounts, Schemas []Count
}

// Ring is the fleet's key, then the old one read from oldFile, if given.
func (f *Fleet) Ring(oldFile string) (secret.Ring, error) {
	key := f.Config.SecretsKey
	if key == nil {
		return nil, errors.New("set USERSYNC_SECRETS_KEY_FILE (or USERSYNC_SECRETS_KEY) to the new key (openssl rand -hex 32 > FILE)")
	}
	if oldFile == "" {
		return secret.Ring{key}, nil
	}
	raw, err := ReadFile(oldFile)
	if err != nil {
		return nil, fmt.Errorf("--old-key-file: %w", err)
	}
	old, err := secret.ParseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("--old-key-file: %w", err)
	}
	return secret.Ring{key, old}, nil
}

// Rekey seals every registered account's stored secrets, then every
// account's OAuth tokens, with ring's first key, under the migration lock.
// It stops at the first value ring does not open; what it sealed before is
// in its result.
func (f *Fleet) Rekey(ctx context.Context, ring secret.Ring) (RekeyResult, error) {
	var res RekeyResult
	err := warehouse.WithMigrationLock(ctx, f.Pool, func(ctx context.Context) error {
		list, err := f.Reg.List(ctx)
		if err != nil {
			return err
		}
		schemas := []string{f.Config.Schema}
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
			if err := f.Reg.UpdateSettings(ctx, a.Name, vals); err != nil {
				return err
			}
			res.Accounts = append(res.Accounts, Count{a.Name, len(vals)})
		}
		for _, s := range schemas {
			n, err := tokens.Rekey(ctx, f.Pool, s, ring)
			if err != nil {
				return err
			}
			if n > 0 {
				res.Schemas = append(res.Schemas, Count{s, n})
			}
		}
		return nil
	})
	return res, err
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

package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

func accountsRemoveCommand() command {
	return command{
		name:    "accounts remove",
		summary: "unregister an account, keeping its schema and snapshots (or dropping them with --drop-data)",
		args:    "NAME",
		details: `Removes the account from the registry: the worker queues none of its work from
its next scheduling pass, and its schema and snapshots stay. --drop-data also drops
its schema and its snapshots (<USERSYNC_SNAPSHOT_DIR>/<its schema>/): it asks for the
account's name again on a terminal, or takes --yes; without either it refuses.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			drop := fs.Bool("drop-data", false, "also drop the account's schema and snapshots")
			yes := fs.Bool("yes", false, "with --drop-data: do not ask for the account's name again")
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("remove", args)
				if err != nil {
					return err
				}
				return withRegistry(ctx, e, func(reg *accounts.Registry) error {
					a, err := reg.Get(ctx, name) // a row edited by hand can be removed too
					if err != nil && !errors.Is(err, accounts.ErrBadSettings) {
						return notFound(name, err)
					}
					if *drop && !*yes {
						if err := confirmDrop(e, a); err != nil {
							return err
						}
					}
					return removeAccount(ctx, e, reg, a, *drop)
				})
			}
		},
	}
}

// confirmDrop asks for the account's name again on a terminal.
func confirmDrop(e *env, a accounts.Account) error {
	f, ok := e.stdin.(*os.File)
	if !ok || !isTerminal(f) {
		return usageError{fmt.Errorf("--drop-data drops schema %s and the account's snapshots: give --yes to confirm (there is no terminal to ask on)", a.Schema())}
	}
	fmt.Fprintf(e.stderr, "This drops schema %s and account %s's snapshots. Type the account's name to confirm: ", a.Schema(), a.Name)
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return usageError{errors.New("not confirmed; nothing changed")}
	}
	if strings.TrimSpace(line) != a.Name {
		return usageError{fmt.Errorf("%q is not %s: not confirmed; nothing changed", strings.TrimSpace(line), a.Name)}
	}
	return nil
}

// removeAccount unregisters a and remakes the union views, under the
// migration lock, then drops its data if asked.
func removeAccount(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account, drop bool) error {
	pool, err := openPool(ctx, e, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	err = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
		if err := reg.Remove(ctx, a.Name); err != nil {
			return notFound(a.Name, err)
		}
		if err := refreshUnion(ctx, e, pool, reg); err != nil {
			if aerr := reg.Add(context.WithoutCancel(ctx), a); aerr != nil {
				return fmt.Errorf("%w (and undoing it: %w)", err, aerr)
			}
			return err
		}
		if drop {
			return reg.DropSchema(ctx, a.Schema())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !drop {
		fmt.Fprintf(e.stdout, "account %s removed; schema %s and its snapshots stay\n", a.Name, a.Schema())
		return nil
	}
	n, err := dropSnapshots(ctx, e, a.Schema())
	if err != nil {
		return fmt.Errorf("account %s removed and schema %s dropped, but removing its snapshots failed: %w", a.Name, a.Schema(), err)
	}
	fmt.Fprintf(e.stdout, "account %s removed; schema %s dropped; %d snapshot file(s) removed\n", a.Name, a.Schema(), n)
	return nil
}

// dropSnapshots removes every file of the snapshot folder of schemaName,
// <USERSYNC_SNAPSHOT_DIR>/<schema>/, and returns how many.
func dropSnapshots(ctx context.Context, e *env, schemaName string) (int, error) {
	c := e.fleetConfig()
	if c.SnapshotDir == "off" {
		return 0, nil
	}
	dest, err := snapshot.ParseDestination(c.SnapshotDir, snapshot.S3Options{Endpoint: c.S3Endpoint, Region: c.S3Region,
		AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey, PathStyle: c.S3PathStyle})
	if err != nil {
		return 0, usageError{fmt.Errorf("USERSYNC_SNAPSHOT_DIR: %w", err)}
	}
	entries, err := dest.List(ctx, schemaName+"/")
	if err != nil {
		return 0, err
	}
	for _, en := range entries {
		if err := dest.Remove(ctx, en); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}

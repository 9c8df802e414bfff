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
its schema and its snapshots (<USERSYNC_SNAPSHOT_DIR>/<its schema>/), only when
usersync made them for this account of this fleet: the schema's marker table
(usersync_owner) and the folder's _owner.json must say so; the fleet's own
schemas and another deployment's are refused. Views outside the schema over its
tables are listed and refused unless --cascade, which drops them one by one; no
other object outside the schema is ever dropped. Snapshot files are removed only
where the folder's marker or their manifest names the account. --drop-data asks
for the account's name again on a terminal, or takes --yes; without either it
refuses.`,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			drop := fs.Bool("drop-data", false, "also drop the account's schema and snapshots")
			yes := fs.Bool("yes", false, "with --drop-data: do not ask for the account's name again")
			cascade := fs.Bool("cascade", false, "with --drop-data: also drop the views outside the account's schema over its tables")
			return func(ctx context.Context, e *env, args []string) error {
				name, err := oneAccountName("remove", args)
				if err != nil {
					return err
				}
				if *cascade && !*drop {
					return usageError{errors.New("--cascade goes with --drop-data")}
				}
				return withRegistry(ctx, e, func(reg *accounts.Registry) error {
					a, err := reg.Get(ctx, name) // a row edited by hand can be removed too
					if err != nil && !errors.Is(err, accounts.ErrBadSettings) {
						return notFound(name, err)
					}
					if *drop {
						if err := checkDrop(ctx, e, reg, a, *cascade); err != nil {
							return err
						}
						if !*yes {
							if err := confirmDrop(e, a); err != nil {
								return err
							}
						}
					}
					return removeAccount(ctx, e, reg, a, *drop, *cascade)
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

// removeAccount unregisters a and remakes the union views without it, under
// the migration lock, then drops its data if asked: its schema (after the
// union views, which then no longer depend on it; cascade drops the views
// outside it over its tables) and its snapshots. A drop that fails puts the
// row back.
func removeAccount(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account, drop, cascade bool) error {
	pool, err := openPool(ctx, e, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	var dropped []accounts.Dependent
	err = warehouse.WithMigrationLock(ctx, pool, func(ctx context.Context) error {
		if err := reg.Remove(ctx, a.Name); err != nil {
			return notFound(a.Name, err)
		}
		if err := refreshUnion(ctx, e, pool, reg); err != nil {
			return undoRemove(ctx, reg, a, err, nil)
		}
		if !drop {
			return nil
		}
		var err error
		if dropped, err = reg.DropAccountSchema(ctx, a.Schema(), cascade, accounts.UnionSchema(e.fleetConfig().Schema)); err != nil {
			return undoRemove(ctx, reg, a, dropError(err), func(ctx context.Context) error { return refreshUnion(ctx, e, pool, reg) })
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
	for _, d := range dropped {
		fmt.Fprintf(e.stdout, "dropped %s (it depended on schema %s)\n", d, a.Schema())
	}
	n, left, err := dropSnapshots(ctx, e, reg, a)
	if err != nil {
		return fmt.Errorf("account %s removed and schema %s dropped, but removing its snapshots failed: %w", a.Name, a.Schema(), err)
	}
	fmt.Fprintf(e.stdout, "account %s removed; schema %s dropped; %d snapshot file(s) removed\n", a.Name, a.Schema(), n)
	if left > 0 {
		fmt.Fprintf(e.stdout, "account %s: %d file(s) in its snapshot folder are not proven its (no marker, no manifest naming it) and were left\n", a.Name, left)
	}
	return nil
}

// undoRemove stores a again after its removal failed with err, and remakes
// the union views with it when they were remade without it (union).
func undoRemove(ctx context.Context, reg *accounts.Registry, a accounts.Account, err error, union func(context.Context) error) error {
	ctx = context.WithoutCancel(ctx)
	if aerr := reg.Add(ctx, a); aerr != nil {
		return fmt.Errorf("%w (and undoing it: %w)", err, aerr)
	}
	if union == nil {
		return err
	}
	if uerr := union(ctx); uerr != nil {
		return fmt.Errorf("%w (and remaking the union views after undoing it: %w)", err, uerr)
	}
	return err
}

// dropSnapshots removes account a's snapshot files, those proven its, and
// returns how many, and how many were left.
func dropSnapshots(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account) (int, int, error) {
	root, err := snapshotRoot(e)
	if err != nil || root == nil {
		return 0, 0, err
	}
	o, err := folderOwner(ctx, reg, a.Name)
	if err != nil {
		return 0, 0, err
	}
	return snapshot.DropFolder(ctx, root, a.Schema(), o, e.logger)
}

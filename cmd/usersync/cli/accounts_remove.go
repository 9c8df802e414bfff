package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/registry"
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
				return withFleet(ctx, e, 4, func(f *registry.Fleet) error {
					a, err := f.Reg.Get(ctx, name) // a row edited by hand can be removed too
					if err != nil && !errors.Is(err, accounts.ErrBadSettings) {
						return registry.NotFound(name, err)
					}
					if *drop {
						if err := f.CheckDrop(ctx, a, *cascade); err != nil {
							return err
						}
						if !*yes {
							if err := confirmDrop(e, a); err != nil {
								return err
							}
						}
					}
					res, err := f.Remove(ctx, a, *drop, *cascade)
					printRemoved(e.stdout, a, *drop, res, err)
					return err
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

// printRemoved says what accounts remove did, as far as it went (err is
// Remove's).
func printRemoved(w io.Writer, a accounts.Account, drop bool, res registry.RemoveResult, err error) {
	if !drop && err == nil {
		fmt.Fprintf(w, "account %s removed; schema %s and its snapshots stay\n", a.Name, a.Schema())
	}
	if !res.SchemaDropped {
		return
	}
	for _, d := range res.Dropped {
		fmt.Fprintf(w, "dropped %s (it depended on schema %s)\n", d, a.Schema())
	}
	if err != nil {
		return
	}
	fmt.Fprintf(w, "account %s removed; schema %s dropped; %d snapshot file(s) removed\n", a.Name, a.Schema(), res.Files)
	if res.Left > 0 {
		fmt.Fprintf(w, "account %s: %d file(s) in its snapshot folder are not proven its (no marker, no manifest naming it) and were left\n", a.Name, res.Left)
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// errNoRegistry says to migrate before adding accounts.
var errNoRegistry = errors.New("the account registry does not exist yet: run usersync migrate (with this version) first")

// checkNewAccount refuses a taken name and a schema that is not free: the
// default account's, the union views', another account's, or one that
// exists already (another deployment's, or anybody's: accounts add makes
// the schema it may later drop).
func checkNewAccount(ctx context.Context, e *env, reg *accounts.Registry, a accounts.Account) error {
	ok, err := reg.Exists(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errNoRegistry
	}
	list, err := reg.List(ctx)
	if err != nil {
		return err
	}
	s, fleet := a.Schema(), e.fleetConfig().Schema
	for _, o := range list {
		switch {
		case o.Name == a.Name:
			return usageError{fmt.Errorf("account %s is registered already (usersync accounts show %s)", a.Name, a.Name)}
		case o.Schema() == s:
			return usageError{fmt.Errorf("schema %s is account %s's; give account %s a schema of its own (--schema)", s, o.Name, a.Name)}
		}
	}
	switch s {
	case fleet:
		return usageError{fmt.Errorf("schema %s is the default account's (USERSYNC_SCHEMA); give account %s a schema of its own (--schema)", s, a.Name)}
	case accounts.UnionSchema(fleet):
		return usageError{fmt.Errorf("schema %s is the fleet's union views'; give account %s another schema (--schema)", s, a.Name)}
	}
	use, err := reg.SchemaUse(ctx, s)
	switch {
	case err != nil:
		return err
	case use.Usersync:
		return usageError{fmt.Errorf("schema %s holds another deployment's usersync tables (%s.schema_migrations); give account %s a schema of its own (--schema)", s, s, a.Name)}
	case use.River:
		return usageError{fmt.Errorf("schema %s_river, another deployment's job queue, exists beside schema %s; give account %s another schema (--schema)", s, s, a.Name)}
	case use.Exists:
		return usageError{fmt.Errorf("schema %s exists already; accounts add creates an account's schema itself (so that --drop-data may drop it): give a new one (--schema)", s)}
	}
	return nil
}

// refreshUnion remakes the views that unite the fleet's accounts, after an
// account came or went, unless they are the accounts' already. A server
// older than PostgreSQL 15 gets none, with a warning.
func refreshUnion(ctx context.Context, e *env, pool *pgxpool.Pool, reg *accounts.Registry) error {
	_, err := fleetUnion(e, reg).Refresh(ctx, pool)
	if errors.Is(err, accounts.ErrUnionNeedsPG15) {
		e.logger.WarnContext(ctx, err.Error())
		return nil
	}
	return err
}

// fleetUnion is the fleet's union views: the default account and every
// registered one, read from the registry when they are made.
func fleetUnion(e *env, reg *accounts.Registry) accounts.Union {
	fleet := e.fleetConfig()
	return accounts.Union{Schema: accounts.UnionSchema(fleet.Schema), ReaderRole: fleet.ReaderRole,
		Members: func(ctx context.Context) ([]accounts.Member, error) {
			heads, err := reg.Heads(ctx)
			if err != nil {
				return nil, err
			}
			members := []accounts.Member{{Name: accounts.Default, Schema: fleet.Schema}}
			for _, h := range heads {
				members = append(members, accounts.Member{Name: h.Name, Schema: h.Schema})
			}
			return members, nil
		}}
}

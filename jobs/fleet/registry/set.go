package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// SetResult is what Set changed.
type SetResult struct {
	Schema  string // the account's, which never changes
	Changed int    // settings stored
	// RoleChanged says the reader role changed, from OldRole (which lost
	// its access to the account's schema when not empty) to NewRole;
	// Notices are the grant's.
	RoleChanged      bool
	OldRole, NewRole string
	Notices          []string
}

// Set stores vals, the settings accounts set was given, over account
// name's, once the whole makes a Config. Where the PII key is replaces
// where it was, and a key the row held (an earlier release's) once the new
// place holds the same key.
func (f *Fleet) Set(ctx context.Context, name string, vals, sources map[string]string) (SetResult, error) {
	a, err := f.Reg.Get(ctx, name)
	if err := mends(err, vals); err != nil {
		return SetResult{}, NotFound(name, err)
	}
	merged := maps.Clone(a.Settings)
	if merged == nil {
		merged = map[string]string{}
	}
	var remove []string
	if vals[PIIKeyFile] != "" || vals[PIIKeyEnv] != "" {
		remove = []string{"USERSYNC_PII_KEY", PIIKeyFile, PIIKeyEnv}
		for _, k := range remove {
			delete(merged, k)
		}
	}
	maps.Copy(merged, vals)
	cfg, _, err := f.Check(name, merged, sources)
	if err != nil {
		return SetResult{}, err
	}
	if err := f.samePIIKey(name, a.Settings, cfg.PIIKey); err != nil {
		return SetResult{}, InputError{err}
	}
	sealed, err := sealSecrets(f.Config.SecretsKey, name, vals)
	if err != nil {
		return SetResult{}, InputError{err}
	}
	res := SetResult{Schema: a.Schema(), Changed: len(vals)}
	if _, ok := vals["USERSYNC_READER_ROLE"]; ok {
		old, ok := a.Settings["USERSYNC_READER_ROLE"]
		if !ok {
			old = f.Config.ReaderRole // the fleet's, which it inherited
		}
		res.OldRole, res.NewRole, res.RoleChanged = old, cfg.ReaderRole, old != cfg.ReaderRole
	}
	if res.RoleChanged {
		res.Notices, err = f.setReaderRole(ctx, a, sealed, res.OldRole, res.NewRole, remove...)
		return res, err
	}
	if err := f.Reg.UpdateSettings(ctx, name, sealed, remove...); err != nil {
		return SetResult{}, NotFound(name, err)
	}
	return res, nil
}

// samePIIKey refuses to drop a PII key stored in the row (an earlier
// release's) for another: the hashes would change, and the stored one may
// be the only copy.
func (f *Fleet) samePIIKey(name string, stored map[string]string, now string) error {
	if stored["USERSYNC_PII_KEY"] == "" {
		return nil
	}
	old, err := f.openSettings(name, stored)
	if err != nil {
		return err
	}
	if old["USERSYNC_PII_KEY"] != now {
		return fmt.Errorf("account %s: the new place of its PII key holds another key than the one stored in its row; give the same key (another hashes every value differently)", name)
	}
	return nil
}

// mends returns nil when Get's err is nil, or says a row whose stored
// settings are not all strings (accounts.SettingsError) and vals sets each
// of those again: only then is the row whole once vals is stored.
func mends(err error, vals map[string]string) error {
	var bad *accounts.SettingsError
	if !errors.As(err, &bad) {
		return err
	}
	missing := slices.DeleteFunc(slices.Clone(bad.Keys), func(k string) bool { _, ok := vals[k]; return ok })
	if len(missing) > 0 || bad.Keys == nil {
		return InputError{fmt.Errorf("%w; this command must give %s too, to mend the row", bad, strings.Join(missing, ", "))}
	}
	return nil
}

// setReaderRole stores vals for account a whose reader role changes from
// oldRole to newRole, under the migration lock: it grants the new role the
// account's tables (as migrate does) before anything is stored, revokes the
// old role's access to the account's schema (its grants elsewhere stay),
// and remakes the union views, which hold only the accounts the fleet's
// reader role may read. It returns the grant's notices.
func (f *Fleet) setReaderRole(ctx context.Context, a accounts.Account, vals map[string]string, oldRole, newRole string, remove ...string) ([]string, error) {
	var notices []string
	err := warehouse.WithMigrationLock(ctx, f.Pool, func(ctx context.Context) error {
		res, err := warehouse.Migrate(ctx, f.Pool, warehouse.MigrateOptions{Schema: a.Schema(), ReaderRole: newRole})
		if errors.Is(err, warehouse.ErrReaderRoleIsMigrator) {
			return InputError{fmt.Errorf("--reader-role %s is the migrating user or a role it belongs to; give the account's analysts a role of their own", newRole)}
		}
		if err != nil {
			return fmt.Errorf("granting %s schema %s: %w", newRole, a.Schema(), err)
		}
		notices = res.Notices
		if err := f.Reg.UpdateSettings(ctx, a.Name, vals, remove...); err != nil {
			return NotFound(a.Name, err)
		}
		if oldRole != "" {
			if err := warehouse.RevokeReader(ctx, f.Pool, a.Schema(), oldRole); err != nil {
				return fmt.Errorf("account %s's settings changed, but %w; run usersync accounts set %s --reader-role %s again", a.Name, err, a.Name, newRole)
			}
		}
		return f.refreshUnion(ctx)
	})
	return notices, err
}

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
)

// checkOtherReaders fails when a role other than USERSYNC_READER_ROLE (and
// the tables' owner) is granted read access to the schema's tables: a
// replaced reader role that kept its grants, or a grant made by hand, reads
// the account all the same.
func (c *checker) checkOtherReaders(ctx context.Context) {
	if !c.migrated {
		c.notChecked("other readers", "migrations")
		return
	}
	s := c.store.Schema()
	others, err := warehouse.OtherReaders(ctx, c.store.Pool(), s, c.e.cfg.ReaderRole)
	if err != nil {
		c.fail("other readers", oneLine(err.Error()), fixDatabase)
		return
	}
	if len(others) == 0 {
		c.pass("other readers", "no role but the reader role may read the tables of "+s)
		return
	}
	var named, revokes []string
	for _, o := range others {
		named = append(named, fmt.Sprintf("%s (%s)", o.Role, strings.Join(o.Tables, ", ")))
		r := o.Role
		if r != "PUBLIC" {
			r = schema.QuoteIdentifier(r)
		}
		revokes = append(revokes, fmt.Sprintf("REVOKE ALL ON ALL TABLES IN SCHEMA %s FROM %s", schema.QuoteIdentifier(s), r))
	}
	c.fail("other readers", fmt.Sprintf("besides the reader role, %s may read schema %s", strings.Join(named, "; "), s),
		"if not meant, revoke them ("+strings.Join(revokes, "; ")+"), or give the account the role with usersync accounts set --reader-role")
}

package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
)

// otherReaders is the reader role check's failure when a role other than
// USERSYNC_READER_ROLE (and the tables' owner) is granted read access to
// the schema's tables: a replaced reader role that kept its grants, or a
// grant made by hand, reads the account all the same. Its detail and fix,
// or "" when there is none.
func (c *checker) otherReaders(ctx context.Context, role string) (detail, fix string, err error) {
	s := c.o.Store.Schema()
	others, err := warehouse.OtherReaders(ctx, c.o.Store.Pool(), s, role)
	if err != nil || len(others) == 0 {
		return "", "", err
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
	return fmt.Sprintf("role %s may read the analysts' tables of %s, but so may %s", role, s, strings.Join(named, "; ")),
		"unless meant, revoke them (" + strings.Join(revokes, "; ") + "); usersync accounts set --reader-role revokes the role it replaces", nil
}

package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one versioned SQL file of the warehouse, rendered for a schema.
type Migration struct {
	Version int    // from the file name's numeric prefix
	Name    string // the file name without extension, e.g. "0001_warehouse"
	SQL     string // the statements, with {{schema}} replaced by the quoted schema name
}

// Migrations returns every migration in version order, rendered for the
// schema named schemaName (which must be a valid identifier).
func Migrations(schemaName string) ([]Migration, error) {
	if err := ValidateIdentifier(schemaName); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("reading embedded migrations: %w", err)
	}
	out := make([]Migration, 0, len(entries))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sql")
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %q: name must start with a number and an underscore", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		sql := strings.ReplaceAll(string(body), "{{schema}}", QuoteIdentifier(schemaName))
		out = append(out, Migration{Version: version, Name: name, SQL: sql})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// identifierPattern is the form accepted for schema and role names: an
// unquoted Postgres identifier in lower case, short enough that River's
// derived names still fit (River allows 46 characters for its schema).
var identifierPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// MaxIdentifierLength is the longest schema or role name accepted.
const MaxIdentifierLength = 40

// ValidateIdentifier reports whether name is usable as a schema or role name.
func ValidateIdentifier(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("must not be empty")
	case len(name) > MaxIdentifierLength:
		return fmt.Errorf("%q is longer than %d characters", name, MaxIdentifierLength)
	case !identifierPattern.MatchString(name):
		return fmt.Errorf("%q must be lower-case letters, digits and underscores, not starting with a digit", name)
	case strings.HasPrefix(name, "pg_"):
		return fmt.Errorf("%q must not start with pg_ (reserved by PostgreSQL)", name)
	}
	return nil
}

// QuoteIdentifier quotes name as a Postgres identifier.
func QuoteIdentifier(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteLiteral quotes s as an SQL string literal, for the statements that
// take no parameters (COMMENT ON).
func QuoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

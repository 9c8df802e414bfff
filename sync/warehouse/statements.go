package warehouse

import (
	"embed"
	"fmt"
	"strings"
)

// The statements the program runs that are not derived from the catalog
// live as SQL in sql/*.sql, each under a "-- name: x" line; the catalog's
// column lists come in as {{...}} placeholders. They are rendered once per
// Store; testdata/statements.golden.sql holds every statement a Store runs,
// rendered for schema usersync (TestStatementsGolden).
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// loadStatements returns the named statements of sql/<file>.sql with each
// {{key}} replaced by vars[key]. A placeholder left unreplaced is an error.
func loadStatements(file string, vars map[string]string) (map[string]string, error) {
	b, err := sqlFiles.ReadFile("sql/" + file + ".sql")
	if err != nil {
		return nil, fmt.Errorf("reading sql/%s.sql: %w", file, err)
	}
	out := map[string]string{}
	name := ""
	var body []string
	flush := func() {
		if name != "" {
			out[name] = strings.TrimSpace(strings.Join(body, "\n"))
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "-- name: "); ok {
			flush()
			name, body = strings.TrimSpace(n), nil
			continue
		}
		if name == "" || strings.HasPrefix(line, "--") {
			continue
		}
		for k, v := range vars {
			line = strings.ReplaceAll(line, "{{"+k+"}}", v)
		}
		if i := strings.Index(line, "{{"); i >= 0 {
			return nil, fmt.Errorf("sql/%s.sql, statement %s: no value for %s", file, name, line[i:])
		}
		body = append(body, line)
	}
	flush()
	return out, nil
}

// assignStatements sets each field to the statement of its name in st (the
// statements of sql/<file>.sql), refusing a name st lacks and a statement no
// field takes.
func assignStatements(file string, st map[string]string, fields map[string]*string) error {
	for name, field := range fields {
		if *field = st[name]; *field == "" {
			return fmt.Errorf("sql/%s.sql has no statement %s", file, name)
		}
	}
	for name := range st {
		if _, ok := fields[name]; !ok {
			return fmt.Errorf("sql/%s.sql: statement %s is not used", file, name)
		}
	}
	return nil
}

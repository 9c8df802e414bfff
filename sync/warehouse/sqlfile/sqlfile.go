package sqlfile

import (
	"fmt"
	"io/fs"
	"strings"
)

// Later is the value of a key, given to Load, that keeps its {{key}} in the
// statements for Fill to replace when they run.
const Later = "\x00later"

// Load returns the named statements of sql/<file>.sql in fsys with each
// {{key}} replaced by vars[key] (kept when it is Later). A placeholder
// without a value is an error.
func Load(fsys fs.FS, file string, vars map[string]string) (map[string]string, error) {
	b, err := fs.ReadFile(fsys, "sql/"+file+".sql")
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
		rest := line // without the placeholders kept
		for k, v := range vars {
			if v == Later {
				rest = strings.ReplaceAll(rest, "{{"+k+"}}", "")
				continue
			}
			line = strings.ReplaceAll(line, "{{"+k+"}}", v)
			rest = strings.ReplaceAll(rest, "{{"+k+"}}", v)
		}
		if i := strings.Index(rest, "{{"); i >= 0 {
			return nil, fmt.Errorf("sql/%s.sql, statement %s: no value for %s", file, name, rest[i:])
		}
		body = append(body, line)
	}
	flush()
	return out, nil
}

// Assign sets each field to the statement of its name in st (the statements
// of sql/<file>.sql), refusing a name st lacks and a statement no field
// takes.
func Assign(file string, st map[string]string, fields map[string]*string) error {
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

// Fill returns stmt, a statement Load kept placeholders in (Later), with
// each {{key}} of vars replaced by its value, in one pass: a value is
// never searched for placeholders.
func Fill(stmt string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	return strings.NewReplacer(pairs...).Replace(stmt)
}

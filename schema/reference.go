package schema

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes every table and view of the warehouse in schemaName,
// each column with its type, nullability and meaning, as plain text.
func WriteText(w io.Writer, schemaName string) {
	for _, t := range Tables() {
		kind := "table"
		if t.View {
			kind = "view"
		}
		fmt.Fprintf(w, "%s %s.%s: %s\n", kind, schemaName, t.Name, t.Meaning)
		for _, c := range t.Columns {
			null := ""
			if !c.Nullable {
				null = " not null"
			}
			fmt.Fprintf(w, "  %-40s %-12s%s\n      %s\n", c.Name, c.Type, null, c.Meaning)
		}
		fmt.Fprintln(w)
	}
}

// Markdown renders every table and view of the warehouse, with each
// column's type, nullability and meaning, from the catalog.
func Markdown(schemaName string) string {
	var b strings.Builder
	for _, t := range Tables() {
		kind := "table"
		if t.View {
			kind = "view"
		}
		fmt.Fprintf(&b, "### `%s.%s` (%s)\n\n%s\n\n| Column | Type | Null | Meaning |\n|---|---|---|---|\n", schemaName, t.Name, kind, t.Meaning)
		for _, c := range t.Columns {
			null := "no"
			if c.Nullable {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type, null, strings.ReplaceAll(c.Meaning, "|", `\|`))
		}
		b.WriteString("\n")
	}
	return b.String()
}

package cli

import (
	"fmt"
	"strings"
)

// SettingsMarkdown renders the configuration reference as a Markdown table
// (variable, flag, default, meaning). README.md carries it between markers,
// and a test keeps the two equal.
func SettingsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	for _, s := range settings() {
		flagName := "—"
		if s.Flag != "" {
			flagName = "`--" + s.Flag + "`"
		}
		def := "—"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		env := "`" + s.Env + "`"
		if s.Secret {
			env += " (secret; or `" + s.Env + "_FILE`)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", env, flagName, def, strings.ReplaceAll(s.Meaning, "|", `\|`))
	}
	return b.String()
}

package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
)

// CommandFlags maps every command to the flags it accepts (its own and the
// settings' flags).
func CommandFlags() map[string][]string {
	out := map[string][]string{}
	for _, c := range commands() {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.setup(fs)
		registerSettingFlags(fs)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		out[c.name] = names
	}
	return out
}

// ConfigurationMarkdown is docs/configuration.md: every setting with its
// variable, flag, default, meaning and example, and every command's flags.
func ConfigurationMarkdown() string {
	var b strings.Builder
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("Generated from `jobs/fleet/config/settings.go` by `make docs`; a test fails when it is stale.\n\n")
	config.WriteMarkdown(&b)
	writeCommandsMarkdown(&b)
	return b.String()
}

// writeCommandsMarkdown lists the commands with the flags of their own.
func writeCommandsMarkdown(b *strings.Builder) {
	b.WriteString("## Commands and their flags\n\n")
	flags := CommandFlags()
	for _, c := range commands() {
		var own []string
		for _, f := range flags[c.name] {
			if !isSetting(f) {
				own = append(own, "`--"+f+"`")
			}
		}
		list := "no flags of its own"
		if len(own) > 0 {
			list = strings.Join(own, ", ")
		}
		fmt.Fprintf(b, "- `usersync %s`: %s (%s)\n", c.name, c.summary, list)
	}
}

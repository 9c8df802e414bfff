package config

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes docs/configuration.md's part on the settings: how
// they are read, a section per setting, and the Go runtime's variables.
func WriteMarkdown(b *strings.Builder) {
	b.WriteString("Settings come from the environment; a flag of the same name overrides it. Secrets come only from the\n")
	b.WriteString("environment or from a file named by `<VARIABLE>_FILE` (Docker and Kubernetes secrets), and are never\n")
	b.WriteString("printed. An invalid value stops the command at start with one line naming the setting. A boolean\n")
	b.WriteString("setting's flag may be given bare (`--schema-force`) or with a value (`--schema-force=false`).\n")
	var emptyIsValue []string
	for _, s := range Settings() {
		if s.EmptyIsValue {
			emptyIsValue = append(emptyIsValue, "`"+s.Env+"=`")
		}
	}
	fmt.Fprintf(b, "A variable set empty counts as unset (the default applies), except %s, whose empty value\n", strings.Join(emptyIsValue, ", "))
	b.WriteString("is the setting's own (its meaning says what it does).\n\n")
	b.WriteString("A `USERSYNC_*` variable that is not a setting (nor a secret's `_FILE` form) gets one warning line at\n")
	b.WriteString("start naming it and the closest setting, e.g. `USERSYNC_SYNC_SCHEDUEL is not a setting (did you mean\n")
	b.WriteString("USERSYNC_SYNC_SCHEDULE?)`; with `USERSYNC_STRICT_CONFIG=true` the command exits 2 instead. The\n")
	fmt.Fprintf(b, "variables of the repository's own scripts are not settings and are never reported: %s.\n\n", "`"+strings.Join(ToolVariables(), "`, `")+"`")
	b.WriteString("Each setting's scope says whether a registered account (`usersync accounts add`, docs/operations.md)\n")
	b.WriteString("sets its own value: an account-scoped setting's flag on `accounts add` (or, for a secret, its file) is\n")
	b.WriteString("the account's, and one it does not give is the fleet's, except its schema and credentials, which are never\n")
	b.WriteString("the default account's. A fleet-wide setting is the environment's for every account.\n\n")
	writeSettingsMarkdown(b)
	b.WriteString("## Go runtime\n\n")
	b.WriteString("usersync leaves the collector at Go's defaults; two variables tune it:\n\n")
	b.WriteString("- `GOMEMLIMIT`: a soft memory limit. The Kubernetes manifest and the systemd unit set it, so the\n")
	b.WriteString("  collector works harder near the limit instead of the process being killed.\n")
	b.WriteString("- `GOGC` (default 100): leave it. A sync's live heap is its pages in flight, a few tens of MB, and\n")
	b.WriteString("  their buffers are reused: `GOGC=200` made a 100,000-user backfill use no less CPU and 30 MiB\n")
	b.WriteString("  more memory, and lets a snapshot's larger heap grow by about 50 MB (docs/benchmarks.md, \"What\n")
	b.WriteString("  the write path's choices are worth\").\n\n")
}

// writeSettingsMarkdown writes a section per setting: its flag, default,
// scope, example and meaning.
func writeSettingsMarkdown(b *strings.Builder) {
	for _, s := range Settings() {
		fmt.Fprintf(b, "## `%s`\n\n", s.Env)
		if s.Flag != "" {
			fmt.Fprintf(b, "- Flag: `--%s`\n", s.Flag)
		} else {
			fmt.Fprintf(b, "- Flag: none (secret: environment or `%s_FILE` only)\n", s.Env)
		}
		def := "none"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		fmt.Fprintf(b, "- Default: %s\n", def)
		fmt.Fprintf(b, "- Scope: %s\n", ScopeText(s))
		if s.Example != "" {
			fmt.Fprintf(b, "- Example: `%s=%s`\n", s.Env, s.Example)
		}
		fmt.Fprintf(b, "\n%s\n\n", upperFirst(s.Meaning))
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteHelp lists every setting with its flag, default and meaning: usersync
// help settings.
func WriteHelp(w io.Writer) {
	fmt.Fprintln(w, "Settings come from the environment; a flag of the same name overrides it.")
	fmt.Fprintln(w, "Secrets come only from the environment or from a file named by <VAR>_FILE.")
	fmt.Fprintln(w, "\nSettings:")
	for _, s := range Settings() {
		flagName := "(environment or " + s.Env + "_FILE only)"
		if s.Flag != "" {
			flagName = "--" + s.Flag
		}
		def := ""
		if s.Default != "" {
			def = " [default " + s.Default + "]"
		}
		fmt.Fprintf(w, "  %s  %s%s\n      %s\n", s.Env, flagName, def, s.Meaning)
	}
}

package config

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// ToolVariables are the USERSYNC_* variables of the repository's own scripts
// (deploy/dev, bench, the chaos driver): they may be in the environment of a
// usersync process without being settings.
func ToolVariables() []string {
	return []string{"USERSYNC_BIN", "USERSYNC_BENCH_*", "USERSYNC_DEV_*"}
}

// Environ returns a lookup over environ (os.Environ's KEY=value form), as
// os.LookupEnv: it says whether a variable is set, so an empty one can be
// told from an unset one; the last of repeated keys wins, as in exec.Cmd.
func Environ(environ []string) func(string) (string, bool) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// unknownVariables returns, sorted, the USERSYNC_* variables of environ that
// are neither a setting, nor a secret's _FILE form, nor a tool variable.
func unknownVariables(environ []string) []string {
	known := EnvNames()
	var unknown []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "USERSYNC_") && !slices.Contains(known, k) && !isToolVariable(k) && !slices.Contains(unknown, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown
}

func isToolVariable(k string) bool {
	for _, t := range ToolVariables() {
		if p, ok := strings.CutSuffix(t, "*"); ok && strings.HasPrefix(k, p) || k == t {
			return true
		}
	}
	return false
}

// closest returns the candidate nearest to name by edit distance (the first
// of equals).
func closest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		if d := levenshtein.ComputeDistance(name, c); bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// CheckVariables warns of every unknown USERSYNC_* variable, one line each
// naming the closest setting; with strict it refuses them instead, in one line.
func CheckVariables(environ []string, strict bool, logger *slog.Logger) error {
	unknown := unknownVariables(environ)
	if len(unknown) == 0 {
		return nil
	}
	known := EnvNames()
	var says []string
	for _, k := range unknown {
		near := closest(k, known)
		say := fmt.Sprintf("%s is not a setting (did you mean %s?)", k, near)
		if !strict {
			logger.Warn(say+"; it is ignored", "variable", k, "closest", near)
		}
		says = append(says, say)
	}
	if strict {
		return fmt.Errorf("%s; remove it, or unset USERSYNC_STRICT_CONFIG", strings.Join(says, "; "))
	}
	return nil
}

// EnvNames lists every environment variable usersync reads, _FILE variants
// of secrets included.
func EnvNames() []string {
	var out []string
	for _, s := range Settings() {
		out = append(out, s.Env)
		if s.Secret || s.File {
			out = append(out, s.Env+"_FILE")
		}
	}
	return out
}

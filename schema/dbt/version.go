package dbt

import (
	"fmt"
	"regexp"
	"strconv"
)

// Form is the form of sources.yml a range of dbt versions parses and acts
// on; each form is read by every dbt of its range, and by later ones with at
// most a deprecation warning.
type Form int

const (
	// FormLegacy is dbt 1.8.0 to 1.9.4: freshness, loaded_at_field and the
	// tests' arguments at the top level; no test descriptions (1.9).
	FormLegacy Form = iota
	// FormConfig is dbt 1.9.5 to 1.10.7: freshness under config (the
	// older dbt ignore it there), loaded_at_field still at the top level.
	FormConfig
	// FormCurrent is dbt 1.10.8 and later: freshness and loaded_at_query
	// under config, the tests' arguments under arguments (an older dbt
	// passes that key to the test macro, which refuses it).
	FormCurrent
)

// dbtVersion is a dbt version as major, minor and patch.
type dbtVersion [3]int

func (v dbtVersion) before(w dbtVersion) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// The first dbt versions of each form, and the oldest one supported.
var (
	dbtOldest      = dbtVersion{1, 8, 0}
	dbtConfigFrom  = dbtVersion{1, 9, 5}
	dbtCurrentFrom = dbtVersion{1, 10, 8}
)

var dbtVersionPattern = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?$`)

// ParseVersion reads --dbt-version: what dbt --version prints (1.10.8),
// or major.minor, which stands for the minor's first release (1.9 is 1.9.0,
// so the form every 1.9 reads); "" is the newest form.
func ParseVersion(s string) (Form, error) {
	if s == "" {
		return FormCurrent, nil
	}
	m := dbtVersionPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("--dbt-version %q: give the version dbt --version prints, such as 1.10.8, or major.minor such as 1.9", s)
	}
	var v dbtVersion
	for i, part := range m[1:] {
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return 0, fmt.Errorf("--dbt-version %q: %w", s, err)
		}
		v[i] = n
	}
	switch {
	case v.before(dbtOldest):
		return 0, fmt.Errorf("--dbt-version %s: the sources.yml needs dbt 1.8 or later", s)
	case v.before(dbtConfigFrom):
		return FormLegacy, nil
	case v.before(dbtCurrentFrom):
		return FormConfig, nil
	}
	return FormCurrent, nil
}

package config

import (
	"reflect"
	"testing"
)

// TestEveryConfigFieldHasASetting: the settings table is the only list of
// settings. Each row sets a Config field, and every field but the ones
// Load derives is set by a row: a field added without a row (so with
// no variable, flag or line in the reference) fails here.
func TestEveryConfigFieldHasASetting(t *testing.T) {
	t.Parallel()
	derived := map[string]bool{"PII": true} // built from the USERSYNC_PII_* rows
	// Values that some setting accepts and that differ from a zero field,
	// tried after the row's own default and example.
	candidates := []string{"true", "7", "0.5", "90m", "30d", "@every 1h", "127.0.0.1:9", "debug", "json",
		"snappy", "teams", "h.example", "user:pass", "email", "abcdefghijklmnopqrstuvwxyz0123456789", "x",
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"} // the last, a key
	typ := reflect.TypeFor[Config]()
	setBy := map[string]string{}
	for _, s := range Settings() {
		values := append([]string{s.Default, s.Example}, candidates...)
		changed := ""
		for _, v := range values {
			var c Config
			if s.set(&c, v) != nil {
				continue
			}
			if changed = changedField(typ, reflect.ValueOf(c)); changed != "" {
				break
			}
		}
		if changed == "" {
			t.Errorf("%s: no value tried sets a field of Config", s.Env)
			continue
		}
		if other, dup := setBy[changed]; dup {
			t.Errorf("Config.%s is set by %s and by %s", changed, other, s.Env)
		}
		setBy[changed] = s.Env
	}
	for f := range typ.Fields() {
		if _, ok := setBy[f.Name]; !ok && !derived[f.Name] {
			t.Errorf("Config.%s is set by no row of the settings table (jobs/fleet/config/settings.go)", f.Name)
		}
	}
}

// changedField names the one non-zero field of c, or "" when none is.
func changedField(typ reflect.Type, c reflect.Value) string {
	for i := range typ.NumField() {
		if !c.Field(i).IsZero() {
			return typ.Field(i).Name
		}
	}
	return ""
}

package cli

import (
	"flag"

	"github.com/usersync/usersync/jobs/fleet/config"
)

// registerSettingFlags adds a flag for every setting that has one. The flags'
// values are applied by config.Load only when given, so the environment stays
// the base and flags override it.
func registerSettingFlags(fs *flag.FlagSet) map[string]*string {
	vals := map[string]*string{}
	for _, s := range config.Settings() {
		if s.Flag == "" {
			continue
		}
		f := &settingFlag{v: s.Default, isBool: s.Default == "true" || s.Default == "false"}
		fs.Var(f, s.Flag, s.Meaning+" (env "+s.Env+")")
		vals[s.Flag] = &f.v
	}
	return vals
}

// settingFlag holds a setting's flag text for config.Load to parse. A boolean
// setting's flag may be given bare (--strict-config), as flag.Bool's may.
type settingFlag struct {
	v      string
	isBool bool
}

func (f *settingFlag) String() string     { return f.v }
func (f *settingFlag) Set(v string) error { f.v = v; return nil }
func (f *settingFlag) IsBoolFlag() bool   { return f.isBool }

// givenSettings are the settings' flags of vals that fs's command line gave,
// by name, with their text: config.Load's flags.
func givenSettings(fs *flag.FlagSet, vals map[string]*string) map[string]string {
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := vals[f.Name]; ok {
			given[f.Name] = *v
		}
	})
	return given
}

// getenvIn is a getenv over environ (os.Environ's KEY=value form).
func getenvIn(environ []string) func(string) string {
	lookup := config.Environ(environ)
	return func(k string) string { v, _ := lookup(k); return v }
}

package cli

import (
	"flag"
	"io"
)

// configFor loads a Config the way Main does, for tests.
func configFor(env map[string]string, args ...string) (Config, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := registerSettingFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return loadConfig(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, fs, vals)
}

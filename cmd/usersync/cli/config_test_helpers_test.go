package cli

import (
	"flag"
	"io"

	"github.com/usersync/usersync/jobs/fleet/config"
)

// configFor loads a Config the way Main does, for tests.
func configFor(env map[string]string, args ...string) (config.Config, error) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := registerSettingFlags(fs)
	if err := fs.Parse(args); err != nil {
		return config.Config{}, err
	}
	return config.Load(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, givenSettings(fs, vals))
}

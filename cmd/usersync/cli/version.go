package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
)

// version is stamped at build time with -ldflags "-X
// github.com/usersync/usersync/cmd/usersync/cli.version=v1.2.3"; the linker
// can only set a package variable, so this is the one there is.
var version = "dev"

// Version returns the version usersync was built as.
func Version() string { return version }

// UserAgent is the User-Agent header usersync sends to the API.
func UserAgent() string { return "usersync/" + version + " (+https://github.com/usersync/usersync)" }

func versionCommand() command {
	return command{
		name:    "version",
		summary: "print the version",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(_ context.Context, e *env, _ []string) error {
				fmt.Fprintf(e.stdout, "usersync %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			}
		},
	}
}

// Command usersync mirrors a sales-engagement platform's users, teams, roles
// and profiles into PostgreSQL and Parquet. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/usersync/usersync/cmd/usersync/cli"
)

// gcPercent is the collector's GOGC unless the environment sets one: a
// sync's live heap is its pages in flight, a few tens of MB, and letting the
// heap grow to 2.5 times it instead of 2 costs about 15 MB of RSS and saves
// about a tenth of a backfill's CPU (docs/benchmarks.md).
const gcPercent = 150

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

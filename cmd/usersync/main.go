// Command usersync mirrors a sales-engagement platform's users, teams, roles
// and profiles into PostgreSQL and Parquet. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/usersync/usersync/cmd/usersync/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.MainWithInput(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

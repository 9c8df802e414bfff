// Command usersync-chaos is a fault-injection driver: it runs usersync
// workers and inline syncs against the simulated API (which keeps changing),
// injects faults in a random order from a printed seed (kill -9 of the worker,
// PostgreSQL stopped and restarted, 429s, 5xx, truncated bodies, slow
// responses, token expiry, a second worker, an inline sync racing the worker),
// lets the system converge after each, and checks the invariants against the
// simulator's ground truth. It ends with a line "N passed, M failed".
//
//	go run ./cmd/usersync-chaos -seed 42 -faults 30
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the driver's flags.
type options struct {
	seed     int64
	faults   int
	kills    int
	users    int
	bin      string
	converge time.Duration
	keep     bool
	soak     time.Duration
	scale    scaleOptions
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("usersync-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.Int64Var(&o.seed, "seed", 0, "seed of the fault order (0: random, printed)")
	fs.IntVar(&o.faults, "faults", 30, "number of faults to inject")
	fs.IntVar(&o.kills, "kills", 20, "how many of them are kill -9 of the worker")
	fs.IntVar(&o.users, "users", 3000, "users in the simulated API")
	fs.StringVar(&o.bin, "bin", "", "usersync binary (default: built from this checkout)")
	fs.DurationVar(&o.converge, "converge", 90*time.Second, "how long the system may take to converge after a fault")
	fs.BoolVar(&o.keep, "keep", false, "keep the chaos database cluster running, and the worker logs, afterwards")
	fs.DurationVar(&o.soak, "soak", 0, "instead of faults, run two worker replicas this long with rolling restarts, a long backfill, a rate-limit budget and links-only teams, then check operations (restarts, failures, budget, snapshots)")
	scaleFlags(fs, &o.scale)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := o.scale.validate(); o.scale.on && err != nil {
		fmt.Fprintf(stderr, "usersync-chaos: %v\n", err)
		return 2
	}
	if o.kills > o.faults {
		o.kills = o.faults
	}
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1_000_000
	}
	d, err := newDriver(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "usersync-chaos: %v\n", err)
		return 1
	}
	drive := d.run
	switch {
	case o.scale.on:
		drive = d.scale
	case o.soak > 0:
		drive = d.soak
	}
	passed, failed := drive(ctx)
	d.close()
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

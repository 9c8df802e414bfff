package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/bench/jobcost"
	"github.com/usersync/usersync/sync/syncer/syncertest"
)

type bench struct {
	root, bin, tmp, pgURL string
	duckdb                string // bench/duckdb with its node_modules; empty: DuckDB is not run
	pool                  *pgxpool.Pool
	postmaster            int // the server's process id, for its CPU time (see serverCPU)
	log                   io.Writer
	commands              string // usersync help, to know which commands exist
}

// newBench starts the bench database and readies the usersync binary: bin
// when set (another commit's, to compare it under this harness), else one
// built from this tree.
func newBench(ctx context.Context, log io.Writer, duckdb bool, bin string) (*bench, error) {
	b := &bench{log: log}
	var err error
	if b.root, err = syncertest.RepoRoot(); err != nil {
		return nil, err
	}
	if duckdb {
		if b.duckdb, err = setupDuckDB(ctx, b.root, log); err != nil {
			return nil, err
		}
	}
	if b.tmp, err = os.MkdirTemp("", "usersync-bench"); err != nil {
		return nil, err
	}
	if b.bin, err = usersyncBinary(ctx, b.root, b.tmp, bin); err != nil {
		return nil, err
	}
	help, err := exec.CommandContext(ctx, b.bin, "help").Output()
	if err != nil {
		return nil, fmt.Errorf("running %s help: %w", b.bin, err)
	}
	b.commands = string(help)
	pg := exec.CommandContext(ctx, filepath.Join(b.root, "deploy/dev/postgres.sh"), "up")
	pg.Env = append(os.Environ(), "USERSYNC_DEV_PG_NAME=bench", "PG_PORT_FIRST=56700", "DATABASE_URL=")
	out, err := pg.Output()
	if err != nil {
		return nil, fmt.Errorf("starting the bench database: %w", err)
	}
	b.pgURL = strings.TrimSpace(string(out))
	if b.pool, err = pgxpool.New(ctx, b.pgURL); err != nil {
		return nil, err
	}
	if b.postmaster, err = postmaster(ctx, b.pool); err != nil {
		return nil, err
	}
	return b, nil
}

// postmaster returns the process id of pool's server: the parent of one
// of its backends.
func postmaster(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, fmt.Errorf("finding the bench server's process: %w", err)
	}
	return jobcost.ParentPid(backend)
}

// usersyncBinary returns bin made absolute or, when bin is empty, a binary
// built from root into tmp.
func usersyncBinary(ctx context.Context, root, tmp, bin string) (string, error) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("-bin: %w", err)
		}
		return abs, nil
	}
	bin = filepath.Join(tmp, "usersync")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/usersync")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building usersync: %w: %s", err, out)
	}
	return bin, nil
}

func (b *bench) close(keep bool) {
	b.pool.Close()
	if !keep {
		pg := exec.CommandContext(context.Background(), filepath.Join(b.root, "deploy/dev/postgres.sh"), "wipe")
		pg.Env = append(os.Environ(), "USERSYNC_DEV_PG_NAME=bench")
		_ = pg.Run()
	}
	_ = os.RemoveAll(b.tmp)
}

// dropSchema drops a warehouse schema and its River schema.
func (b *bench) dropSchema(ctx context.Context, name string) error {
	for _, s := range []string{name, name + "_river"} {
		if _, err := b.pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`); err != nil {
			return err
		}
	}
	return nil
}

// quiesce readies the database for a timed step: it waits, up to five
// minutes, until no autovacuum worker is busy (a step must not share the
// cores with the vacuum of rows an earlier one inserted), then forces a
// checkpoint, so every step starts just after one: a checkpoint that falls
// within a step makes it write full pages to the WAL for every page it
// touches next, and moved the raw COPY by up to half from run to run.
func (b *bench) quiesce(ctx context.Context) {
	for range 300 {
		var busy int
		err := b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND state = 'active'`).Scan(&busy)
		if err != nil || busy == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	_, _ = b.pool.Exec(ctx, `CHECKPOINT`)
}

package syncer_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema/schematest"
)

// statementCounter is a pgx tracer that records what goes through a pool:
// every statement, batched query and COPY, and which of them committed (a
// COMMIT, or a writing statement outside a transaction block), and the
// transactions PostgreSQL counts in xact_commit, read-only ones included
// (a statement or a batch outside a transaction block is one).
type statementCounter struct {
	mu      sync.Mutex
	on      bool
	inTx    map[*pgx.Conn]bool
	inBatch map[*pgx.Conn]bool
	sqls    []string
	commits int
	xacts   int
	ddl     int
}

// countedPool is schematest.NewPool with c tracing its connections.
func countedPool(tb testing.TB, c *statementCounter) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(schematest.DatabaseURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	cfg.ConnConfig.Tracer = c
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// start forgets what was counted and counts from now on.
func (c *statementCounter) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.sqls, c.commits, c.xacts, c.ddl = true, nil, 0, 0, 0
}

// transactions returns the transactions counted since start.
func (c *statementCounter) transactions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.xacts
}

// stop ends the count and returns the statements, commits and DDL counted.
func (c *statementCounter) stop() (sqls []string, commits, ddl int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.sqls, c.commits, c.ddl
}

func (c *statementCounter) note(conn *pgx.Conn, sql string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inTx == nil {
		c.inTx = map[*pgx.Conn]bool{}
	}
	word := strings.TrimRight(strings.ToLower(strings.Fields(strings.TrimSpace(sql) + " x")[0]), ";")
	inTx := c.inTx[conn]
	switch {
	case word == "begin":
		c.inTx[conn] = true
	case word == "commit" || word == "rollback":
		c.inTx[conn] = false
	}
	if !c.on {
		return
	}
	c.sqls = append(c.sqls, sql)
	switch word {
	case "create", "drop", "alter", "truncate":
		c.ddl++
	}
	if word == "commit" || (!inTx && word != "begin" && word != "select" && word != "rollback") {
		c.commits++
	}
	if word == "commit" || (!inTx && !c.inBatch[conn] && word != "begin" && word != "rollback") {
		c.xacts++
	}
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.note(conn, data.SQL)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inBatch == nil {
		c.inBatch = map[*pgx.Conn]bool{}
	}
	if c.on && !c.inTx[conn] {
		c.xacts++
	}
	c.inBatch[conn] = true
	return ctx
}

func (c *statementCounter) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.note(conn, data.SQL)
}

func (c *statementCounter) TraceBatchEnd(_ context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inBatch[conn] = false
}

func (c *statementCounter) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	c.note(conn, "copy "+data.TableName.Sanitize())
	return ctx
}

func (c *statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

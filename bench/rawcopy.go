package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
)

// rawCopyApp is the application_name of the raw COPY's connection.
const rawCopyApp = "usersync-bench-raw-copy"

// rawWalk is what a limits walk measured: time fetching, decoding and
// copying, the users, and the COPYs' CPU time.
type rawWalk struct {
	fetch, decode, copying time.Duration
	users                  int
	cpu                    copyCPU
}

// limits walks every page of users once, as a sync asks for them: it times
// fetching the bodies (the simulator's serving rate), decoding and typing
// them (the sync's single pass, normalize.DecodeData), and a raw COPY of the
// typed rows, hashed beforehand, into an empty copy of the users table with
// its indexes, one transaction per page, on a connection of its own. It
// returns the raw COPY's rate and CPU time (see copyPage) and, when r is
// not nil, sets r's serving and decoding rates.
func (b *bench) limits(ctx context.Context, r *result, base, name string) (float64, copyCPU, error) {
	raw := schema.QuoteIdentifier(name) + ".users_raw"
	if _, err := b.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s (LIKE %s.users INCLUDING ALL)`, raw, schema.QuoteIdentifier(name))); err != nil {
		return 0, copyCPU{}, err
	}
	// Dropped once measured: autovacuum would otherwise vacuum its million
	// freshly inserted rows while the backfill runs, on the same cores.
	defer func() { _, _ = b.pool.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+raw) }()
	pool, store, err := b.rawCopyStore(ctx, name)
	if err != nil {
		return 0, copyCPU{}, err
	}
	defer pool.Close()
	var w rawWalk
	if err := b.walkAndCopy(ctx, base, store, &w); err != nil {
		return 0, copyCPU{}, err
	}
	pool.Close()
	// The next step starts once this connection's backend has gone.
	if err := b.awaitGone(ctx, rawCopyApp); err != nil {
		return 0, copyCPU{}, err
	}
	n := float64(w.users)
	if r != nil {
		r.serveRate, r.decodeRate = n/(w.fetch-w.decode).Seconds(), n/w.decode.Seconds()
	}
	return n / w.copying.Seconds(), w.cpu, nil
}

// rawCopyStore opens the raw COPY's connection (one, named rawCopyApp)
// and a store of schema name on it.
func (b *bench) rawCopyStore(ctx context.Context, name string) (*pgxpool.Pool, *rawCopier, error) {
	cfg, err := pgxpool.ParseConfig(b.pgURL)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns, cfg.ConnConfig.RuntimeParams["application_name"] = 1, rawCopyApp
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	c, err := newRawCopier(pool, name, "users_raw")
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, c, nil
}

// walkAndCopy fetches every users page from base, decodes it and copies
// its rows into users_raw, adding to w.
func (b *bench) walkAndCopy(ctx context.Context, base string, store *rawCopier, w *rawWalk) error {
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: base, Auth: jsonapi.StaticToken("bench")})
	if err != nil {
		return err
	}
	norm := normalize.New(schema.User())
	// The backfill's own first request, so that it is answered from the
	// recording.
	s, err := syncer.New(client, nil, syncer.Config{PageSize: 1000})
	if err != nil {
		return err
	}
	q := s.FullUsersQuery()
	pages := jsonapi.DecodeData(client.Collection("users", q), func(body []byte) (*normalize.Page, int, error) {
		start := time.Now()
		defer func() { w.decode += time.Since(start) }()
		return norm.DecodeData(body)
	})
	for {
		start := time.Now()
		page, err := pages.Next(ctx)
		w.fetch += time.Since(start)
		if err != nil {
			return err
		}
		if page == nil {
			return nil
		}
		if err := b.copyPage(ctx, store, page.Decoded.Rows, w); err != nil {
			return err
		}
	}
}

// copyPage copies one page's rows into users_raw (rawCopier.copy, which
// times the COPY alone) and adds its CPU time to w: the server's during
// the COPY, and the bench's own over it less hashing the rows. The raw
// COPY's rows come hashed: rawCopier.copy hashes them in this process before
// its COPY starts, so the same hashing is measured on its own first and
// taken off. What stays is the COPY's client: encoding the rows (the
// sync's own encoder), the protocol, and the garbage it leaves.
func (b *bench) copyPage(ctx context.Context, store *rawCopier, rows []normalize.Row, w *rawWalk) error {
	h0, err := benchCPU()
	if err != nil {
		return err
	}
	for i := range rows {
		_, _ = rows[i].Hash(), rows[i].LinkageHash()
	}
	h1, err := benchCPU()
	if err != nil {
		return err
	}
	s0, err := b.serverCPUNow()
	if err != nil {
		return err
	}
	c0, err := benchCPU()
	if err != nil {
		return err
	}
	took, err := store.copy(ctx, rows, 1000) // times the COPY alone
	if err != nil {
		return err
	}
	c1, err := benchCPU()
	if err != nil {
		return err
	}
	s1, err := b.serverCPUNow()
	if err != nil {
		return err
	}
	w.copying += took
	w.users += len(rows)
	w.cpu.server += s1 - s0
	w.cpu.client += (c1 - c0) - (h1 - h0)
	return nil
}

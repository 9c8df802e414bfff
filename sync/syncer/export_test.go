package syncer

import (
	"context"
	"time"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// Pipeline, for the tests, is the pipeline a run writes its users walk with.
type Pipeline = pipeline

// NewPipeline, for the tests, is newPipeline with its hooks: requests fills
// each checkpoint's request counters, committed sees each commit.
func NewPipeline(u *users.Store, cp warehouse.Checkpoint, writers int, requests func(*warehouse.Progress), committed func(warehouse.Checkpoint)) *Pipeline {
	p := newPipeline(u, cp, writers)
	p.requests = requests
	if committed != nil {
		p.committed = func(cp warehouse.Checkpoint, _ int, _ time.Duration) { committed(cp) }
	}
	return p
}

// AddPage, for the tests, is Add of a page of rows.
func (p *pipeline) AddPage(ctx context.Context, rows []normalize.Row, nextURL string, release func()) error {
	return p.Add(ctx, walkPage{rows: rows, nextURL: nextURL, release: release})
}

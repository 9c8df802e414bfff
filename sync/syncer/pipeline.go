package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// pipeline writes the pages of one users walk, each prepared with
// users.Store.PreparePage and committed with its handle, and owns the order
// they commit in:
//
//   - Pages commit in the order they were added, each in one transaction
//     with the checkpoint that follows it, so a crashed run resumes exactly
//     after its last committed page.
//   - Up to writers pages are in flight: a page is prepared (its rows, the
//     bulk of the work) while the page before it commits, on another
//     connection.
//   - A page holding a user of a page in flight waits for it before it is
//     written, as their writes would touch the same rows.
//   - A page never commits after one that failed: it is rolled back
//     (errEarlierPage), and the pipeline reports the failed page's error.
//   - The checkpoint passes from each page to the next with its commit: no
//     two goroutines hold it at once.
//   - A page is released once it has committed, and never when it failed:
//     its rows may borrow a body that its release hands to a later page
//     (jsonapi.Page.Release).
//
// Each rule has its test in pipeline_test.go. Add hands it pages; Wait
// waits for them. A pipeline is used from one goroutine.
type pipeline struct {
	store   *users.Store
	writers int
	// requests (when set) fills the run's request counters into a
	// checkpoint before it is written; committed (when set) is called after
	// each commit. Both are called from the writers, in page order.
	requests  func(*warehouse.Progress)
	committed func(cp warehouse.Checkpoint, rows int, took time.Duration)

	cp       warehouse.Checkpoint // after the last page that left the pipeline
	number   int64                // pages added, counted from the first cp's
	inflight []*pageWrite
	err      error // the first error, in page order
}

// pageWrite is one page in flight.
type pageWrite struct {
	ids  map[int64]bool       // the page's user ids, quarantined ones included
	done chan struct{}        // closed when the page committed or failed
	cp   warehouse.Checkpoint // after the page, once done (when err is nil)
	err  error                // set before done is closed
}

// errEarlierPage stops a page whose predecessor failed; the pipeline
// reports the predecessor's error.
var errEarlierPage = errors.New("an earlier page failed")

// newPipeline returns a pipeline continuing from cp (a new run's, or the
// one a resumed run stored).
func newPipeline(store *users.Store, cp warehouse.Checkpoint, writers int) *pipeline {
	return &pipeline{store: store, writers: max(writers, 1), cp: cp, number: cp.Progress.Pages}
}

// Add hands the pipeline the next page. It returns the error of a page
// that failed meanwhile (the first, in page order), and then does not take
// the page.
func (p *pipeline) Add(ctx context.Context, page walkPage) error {
	pw := &pageWrite{ids: page.ids(), done: make(chan struct{})}
	for len(p.inflight) > 0 && (len(p.inflight) >= p.writers || p.overlaps(pw)) {
		p.pop()
	}
	if p.err != nil {
		return p.err
	}
	var prev *pageWrite
	if n := len(p.inflight); n > 0 {
		prev = p.inflight[n-1]
	}
	p.inflight = append(p.inflight, pw)
	p.number++
	go p.write(ctx, pw, page, p.number, prev, p.cp)
	return nil
}

// write writes page number: prepared at once, committed once prev (the
// page before it; nil when none is in flight, base then being the
// checkpoint it follows) has committed, rolled back if prev failed.
func (p *pipeline) write(ctx context.Context, pw *pageWrite, page walkPage, number int64, prev *pageWrite, base warehouse.Checkpoint) {
	defer close(pw.done)
	start := time.Now()
	// base's run and policy are the same on every page.
	prepared, err := p.store.PreparePage(ctx, page.rows, page.bad, base.Writer())
	if err != nil {
		pw.err = fmt.Errorf("writing page %d: %w", number, err)
		return
	}
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			prepared.Rollback(ctx)
			pw.err = fmt.Errorf("writing page %d: %w", number, errEarlierPage)
			return
		}
		base = prev.cp
	}
	base.NextURL = page.nextURL
	if p.requests != nil {
		p.requests(&base.Progress)
	}
	cp, err := prepared.Commit(ctx, base)
	if err != nil {
		pw.err = fmt.Errorf("writing page %d: %w", number, err)
		return
	}
	pw.cp = cp
	if p.committed != nil {
		p.committed(cp, len(page.rows)+len(page.bad), time.Since(start))
	}
	if page.release != nil {
		page.release()
	}
}

// pop waits for the oldest page in flight.
func (p *pipeline) pop() {
	pw := p.inflight[0]
	<-pw.done
	p.inflight = p.inflight[1:]
	if p.err == nil {
		p.err = pw.err
		if pw.err == nil {
			p.cp = pw.cp
		}
	}
}

// overlaps reports whether pw shares a user with a page in flight.
func (p *pipeline) overlaps(pw *pageWrite) bool {
	for _, o := range p.inflight {
		for id := range pw.ids {
			if o.ids[id] {
				return true
			}
		}
	}
	return false
}

// Failed returns the first error of the pages written so far, without
// waiting for those in flight.
func (p *pipeline) Failed() error {
	for len(p.inflight) > 0 && p.err == nil {
		select {
		case <-p.inflight[0].done:
			p.pop()
		default:
			return nil
		}
	}
	return p.err
}

// Wait waits for every page in flight and returns the first error, in page
// order. The pipeline takes more pages after it only if there was none.
func (p *pipeline) Wait() error {
	for len(p.inflight) > 0 {
		p.pop()
	}
	return p.err
}

// Checkpoint returns the checkpoint after the last page that committed
// and left the pipeline: after Wait, the last page committed.
func (p *pipeline) Checkpoint() warehouse.Checkpoint { return p.cp }

package users

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// Page is one page of a users walk, typed, as a Load writes it.
type Page struct {
	Rows []normalize.Row
	Bad  []warehouse.Quarantined // resources that could not be typed
	// NextURL is the walk's next link as the checkpoint stores it ("" on
	// the last page): a resumed run continues from it.
	NextURL string
	// Release, when set, is called once the page has committed, and never
	// for a page that failed: the rows' bytes may belong to a buffer that
	// Release hands to a later page (see jsonapi.Page.Release).
	Release func()
}

// Options configures a Load.
type Options struct {
	// Writers is how many pages are written at once, each in its own
	// transaction on its own connection (at least 1).
	Writers int
	// Requests, when set, fills the run's request counters into a
	// checkpoint's progress just before the checkpoint is written.
	Requests func(*warehouse.Progress)
	// Committed, when set, is called after each page commits, in page
	// order, with the checkpoint after it.
	Committed func(cp warehouse.Checkpoint, rows int, took time.Duration)
	Logger    *slog.Logger
}

// Load writes the pages of one users walk, in order, with the run's
// checkpoint. It owns the write protocol:
//
//   - Pages commit in the order they were added, each in one transaction
//     with the checkpoint that follows it, so a crashed run resumes exactly
//     after its last committed page; a page never commits after one that
//     failed.
//   - Up to Writers pages are in flight: a page is prepared (its rows, the
//     bulk of the work) while the page before it commits, on another
//     connection. A page holding a user of a page in flight waits for it
//     first, as their writes would touch the same rows.
//   - The checkpoint passes from each page to the next with its commit:
//     no two goroutines hold it at once.
//   - A load that starts on an empty warehouse builds user_teams' team_id
//     index once at the end instead of row by row (see teamindex.go).
//
// Add hands it pages; Finish waits for them and returns the checkpoint.
// A Load is used from one goroutine.
type Load struct {
	s        *Store
	o        Options
	cp       warehouse.Checkpoint // after the last page that left the pipeline
	number   int64                // pages added, counted from cp's at Begin
	inflight []*pageWrite
	err      error // the first error, in page order
	deferred bool  // the team index was dropped and is built by Finish
}

// pageWrite is one page in flight.
type pageWrite struct {
	ids  map[int64]bool       // the page's user ids, quarantined ones included
	done chan struct{}        // closed when the page committed or failed
	cp   warehouse.Checkpoint // after the page, once done (when err is nil)
	err  error                // set before done is closed
}

// Begin starts a load continuing from cp (a new run's, or the one a
// resumed run stored). On a warehouse with no user it defers user_teams'
// team_id index to Finish; otherwise it builds the index if a load that
// died left it missing.
func (s *Store) Begin(ctx context.Context, cp warehouse.Checkpoint, o Options) (*Load, error) {
	o.Writers = max(o.Writers, 1)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Load{s: s, o: o, cp: cp, number: cp.Progress.Pages}
	empty, err := s.usersEmpty(ctx)
	if err != nil {
		return nil, err
	}
	if empty {
		if l.deferred, err = s.deferTeamIndex(ctx); err != nil {
			return nil, err
		}
	}
	if !l.deferred {
		if err := s.EnsureTeamIndex(ctx, o.Logger); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Add hands the load the next page. It returns the error of a page that
// failed meanwhile (the first, in page order), and then does not take p.
func (l *Load) Add(ctx context.Context, p Page) error {
	pw := &pageWrite{ids: pageIDs(p), done: make(chan struct{})}
	for len(l.inflight) > 0 && (len(l.inflight) >= l.o.Writers || l.overlaps(pw)) {
		l.pop()
	}
	if l.err != nil {
		return l.err
	}
	var prev *pageWrite
	if len(l.inflight) > 0 {
		prev = l.inflight[len(l.inflight)-1]
	}
	l.inflight = append(l.inflight, pw)
	l.number++
	base, number := l.cp, l.number
	go func() {
		defer close(pw.done)
		pw.cp, pw.err = l.write(ctx, p, number, prev, base)
		if pw.err == nil && p.Release != nil {
			p.Release()
		}
	}()
	return nil
}

// errEarlierPage stops a page whose predecessor failed; the load reports
// the predecessor's error.
var errEarlierPage = errors.New("an earlier page failed")

// write writes page number: prepared at once, committed after prev (the
// page before it, nil when none in flight, base then being the checkpoint
// it follows) has committed. It returns the checkpoint after the page.
func (l *Load) write(ctx context.Context, p Page, number int64, prev *pageWrite, base warehouse.Checkpoint) (warehouse.Checkpoint, error) {
	start := time.Now()
	page, err := l.s.prepareUsers(ctx, p.Rows, p.Bad, base.Writer())
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			if page != nil {
				page.rollback(ctx)
			}
			return warehouse.Checkpoint{}, errEarlierPage
		}
		base = prev.cp
	}
	if err != nil {
		return warehouse.Checkpoint{}, fmt.Errorf("writing page %d: %w", number, err)
	}
	base.NextURL = p.NextURL
	if l.o.Requests != nil {
		l.o.Requests(&base.Progress)
	}
	_, next, err := page.commit(ctx, &base)
	if err != nil {
		return warehouse.Checkpoint{}, fmt.Errorf("writing page %d: %w", number, err)
	}
	if l.o.Committed != nil {
		l.o.Committed(next, len(p.Rows)+len(p.Bad), time.Since(start))
	}
	return next, nil
}

// pop waits for the oldest page in flight.
func (l *Load) pop() {
	pw := l.inflight[0]
	<-pw.done
	l.inflight = l.inflight[1:]
	if l.err == nil {
		l.err = pw.err
		if pw.err == nil {
			l.cp = pw.cp
		}
	}
}

// overlaps reports whether pw shares a user with a page in flight.
func (l *Load) overlaps(pw *pageWrite) bool {
	for _, o := range l.inflight {
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
func (l *Load) Failed() error {
	for len(l.inflight) > 0 && l.err == nil {
		select {
		case <-l.inflight[0].done:
			l.pop()
		default:
			return nil
		}
	}
	return l.err
}

// Wait waits for every page in flight and returns the first error, in page
// order. The load takes more pages after it only if there was none.
func (l *Load) Wait() error {
	for len(l.inflight) > 0 {
		l.pop()
	}
	return l.err
}

// Checkpoint returns the checkpoint after the last page that committed
// and left the pipeline: after Wait, the last page committed.
func (l *Load) Checkpoint() warehouse.Checkpoint { return l.cp }

// Finish waits for the pages in flight, builds the team index if the load
// deferred it (even when a page failed: the warehouse is queried meanwhile,
// and a failed load may not be resumed soon), and returns the checkpoint
// after the last page committed and the first error.
func (l *Load) Finish(ctx context.Context) (warehouse.Checkpoint, error) {
	err := l.Wait()
	if l.deferred {
		l.deferred = false
		err = errors.Join(err, l.s.EnsureTeamIndex(context.WithoutCancel(ctx), l.o.Logger))
	}
	return l.cp, err
}

func pageIDs(p Page) map[int64]bool {
	ids := make(map[int64]bool, len(p.Rows)+len(p.Bad))
	for i := range p.Rows {
		ids[p.Rows[i].ID] = true
	}
	for _, q := range p.Bad {
		if id, err := strconv.ParseInt(q.ID, 10, 64); err == nil {
			ids[id] = true
		}
	}
	return ids
}

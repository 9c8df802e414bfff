package syncer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// usersQuery is the first request of a users walk over [from, until]:
// sorted by updatedAt, count=false (the client's default), page[size], and
// the teams' ids when the API includes them.
func (s *Syncer) usersQuery(from, until *time.Time) jsonapi.Query {
	q := s.withTeams(s.UserQuery()).Sort("updatedAt").PageSize(s.cfg.PageSize)
	if from != nil || until != nil {
		var f, u time.Time
		if from != nil {
			f = *from
		}
		if until != nil {
			u = *until
		}
		q = q.Filter("updatedAt", jsonapi.Range(f, u))
	}
	return q
}

// UserQuery is the base of every users request that loads users (syncs,
// backfills, reconcile fetches): write access always, data connections
// unless turned off.
func (s *Syncer) UserQuery() jsonapi.Query {
	q := jsonapi.Query{}.ProvideAuthorizationMeta()
	if !s.cfg.NoDataConnections {
		q = q.ProvideDataConnections()
	}
	return q
}

// syncUsers walks the users of the run's range (or resumes the walk from the
// checkpointed next link) and writes each page in one transaction.
func (r *run) syncUsers(ctx context.Context) error {
	var pages *jsonapi.Pages
	fromLink, deferred := false, false
	switch {
	case r.resumed && r.cp.NextURL != "":
		pages, fromLink = r.s.client.Resume(r.cp.NextURL), true
	case r.resumed && r.cp.Progress.Pages > 0:
		return nil // the walk had ended; only finishing the run was left
	default:
		pages = r.s.client.Collection("users", r.s.usersQuery(r.from, r.until))
		empty, err := r.s.store.UsersEmpty(ctx)
		if err != nil {
			return err
		}
		if empty {
			r.seen = roaring64.New()
			if deferred, err = r.s.store.DeferTeamIndex(ctx); err != nil {
				return err
			}
		}
	}
	if !deferred {
		// A load that died may have left user_teams without it.
		if err := r.s.ensureTeamIndex(ctx); err != nil {
			return err
		}
	}
	err := r.walk(ctx, pages)
	if err != nil && !fromLink && r.cp.Progress.Pages == r.pagesAtStart() && r.s.refusedInclude(ctx, err) {
		err = r.walk(ctx, r.s.client.Collection("users", r.s.usersQuery(r.from, r.until)))
	}
	if err != nil && fromLink && r.cp.Progress.Pages == r.pagesAtStart() && isStaleCursor(err) {
		// The stored next link no longer works: walk again from just before
		// the greatest updatedAt committed (or from the range's start).
		from := r.from
		if !r.cp.MaxUpdatedAt.IsZero() {
			f := r.cp.MaxUpdatedAt.Add(-r.s.cfg.Lookback).Truncate(time.Millisecond)
			if from == nil || f.After(*from) {
				from = &f
			}
		}
		r.s.cfg.Logger.WarnContext(ctx, "stored next link refused; restarting the walk from the checkpoint", "run_id", r.runID, "from", fmtTime(from))
		err = r.walk(ctx, r.s.client.Collection("users", r.s.usersQuery(from, r.until)))
		if err != nil && r.cp.Progress.Pages == r.pagesAtStart() && r.s.refusedInclude(ctx, err) {
			err = r.walk(ctx, r.s.client.Collection("users", r.s.usersQuery(from, r.until)))
		}
	}
	if deferred {
		// Built even when the walk failed: the warehouse is queried
		// meanwhile, and a failed load may not be resumed soon.
		if ierr := r.s.ensureTeamIndex(context.WithoutCancel(ctx)); ierr != nil {
			err = errors.Join(err, ierr)
		}
	}
	return err
}

// ensureTeamIndex builds user_teams' team_id index when it is missing (see
// warehouse.DeferTeamIndex).
func (s *Syncer) ensureTeamIndex(ctx context.Context) error {
	start := time.Now()
	built, err := s.store.EnsureTeamIndex(ctx)
	if built {
		s.cfg.Logger.InfoContext(ctx, "built the team_id index of user_teams", "duration_ms", time.Since(start).Milliseconds())
	}
	return err
}

func (r *run) pagesAtStart() int64 { return r.startPages }

func (r *run) draining() bool {
	select {
	case <-r.req.Drain:
		return true
	default:
		return false
	}
}

// walk consumes pages through a bounded pipeline: page N+2 is fetched and
// typed and page N+1 hashed while page N is written, and two pages are
// written at once on two connections (see pageWrite).
func (r *run) walk(ctx context.Context, pages *jsonapi.Pages) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the pipeline's goroutines on an early return
	r.startPages = r.cp.Progress.Pages
	pages.DecodeData(r.s.decodeUsers)
	var w writes
	// The writes in flight end before the walk returns; an early return
	// already carries the error that matters.
	defer func() { _ = w.wait() }()
	number := r.cp.Progress.Pages
	for p := range r.s.normalizePages(ctx, jsonapi.Prefetch(ctx, pages, r.s.cfg.Prefetch)) {
		if err := w.failed(); err != nil {
			return err
		}
		if p.err != nil {
			if err := w.wait(); err != nil {
				return err
			}
			return p.err // the client names the page and request
		}
		number++
		r.count(p.rows)
		if err := w.start(ctx, r, p, number, r.s.cfg.Writers); err != nil {
			return err
		}
		if p.page.NextURL != "" && r.draining() {
			if err := w.wait(); err != nil {
				return err
			}
			return ErrDrained
		}
	}
	if err := w.wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// count notes what the run reports of a page's users besides the load.
func (r *run) count(rows []normalize.Row) {
	for i := range rows {
		if !rows[i].TeamsSent {
			r.noTeamsData++
		}
		if rows[i].CanWrite != nil {
			r.canWrite = rows[i].CanWrite // the API user's write access, as last seen
		}
		if rows[i].UpdatedAt.After(r.horizon) {
			r.future++ // stored, but not moving the watermark (see warehouse.Checkpoint)
		}
	}
}

// writes are the pages being written, oldest first. A page is prepared
// (warehouse.PrepareUsers: its rows and teams, the bulk of the work) on its
// own connection while the page before it is still being written, and
// committed with its checkpoint only once that page has committed: the
// checkpoints stay in page order, and a page never commits after one that
// failed. A page holding a user of the page before it waits for that page
// to commit first, as their writes would touch the same rows.
type writes struct {
	inflight []*pageWrite
	err      error // the first error, in page order
}

// pageWrite is one page being written.
type pageWrite struct {
	ids  map[int64]bool // the page's user ids, quarantined ones included
	done chan struct{}  // closed when the page committed or failed
	err  error          // set before done is closed
}

// start writes p in a goroutine once fewer than max pages are in flight and
// none of them shares a user with p. It returns the error of a page that
// failed meanwhile, and then does not start p.
func (w *writes) start(ctx context.Context, r *run, p normalizedPage, number int64, max int) error {
	pw := &pageWrite{ids: pageIDs(p), done: make(chan struct{})}
	for len(w.inflight) > 0 && (len(w.inflight) >= max || w.overlaps(pw)) {
		w.pop()
	}
	if w.err != nil {
		return w.err
	}
	var prev *pageWrite
	if len(w.inflight) > 0 {
		prev = w.inflight[len(w.inflight)-1]
	}
	w.inflight = append(w.inflight, pw)
	isNew := r.newIDs(pw.ids)
	go func() {
		defer close(pw.done)
		pw.err = r.writePage(ctx, p, number, prev, isNew)
		if pw.err == nil {
			// Committed: nothing refers to the rows any more, and their
			// strings are the body's bytes, so the body can take a later page.
			p.page.Release()
		}
	}()
	return nil
}

// newIDs returns, on an initial load, which of a page's ids are new to the
// warehouse (those no earlier page of the run held: pages sharing a user are
// written one after the other, so the earlier one has committed when the
// later one reads), and marks them seen; nil otherwise.
func (r *run) newIDs(ids map[int64]bool) func(int64) bool {
	if r.seen == nil {
		return nil
	}
	var again map[int64]bool
	for id := range ids {
		if r.seen.Contains(uint64(id)) {
			if again == nil {
				again = map[int64]bool{}
			}
			again[id] = true
		}
		r.seen.Add(uint64(id))
	}
	if r.seen.GetSizeInBytes() > maxSeenBytes {
		r.seen = nil
	}
	return func(id int64) bool { return !again[id] }
}

// pop waits for the oldest page in flight.
func (w *writes) pop() {
	pw := w.inflight[0]
	<-pw.done
	w.inflight = w.inflight[1:]
	if w.err == nil {
		w.err = pw.err
	}
}

// overlaps reports whether pw shares a user with a page in flight.
func (w *writes) overlaps(pw *pageWrite) bool {
	for _, o := range w.inflight {
		for id := range pw.ids {
			if o.ids[id] {
				return true
			}
		}
	}
	return false
}

// failed returns the first error of the pages written so far, without
// waiting for those in flight.
func (w *writes) failed() error {
	for len(w.inflight) > 0 && w.err == nil {
		select {
		case <-w.inflight[0].done:
			w.pop()
		default:
			return nil
		}
	}
	return w.err
}

// wait waits for every page in flight and returns the first error, in page
// order.
func (w *writes) wait() error {
	for len(w.inflight) > 0 {
		w.pop()
	}
	return w.err
}

func pageIDs(p normalizedPage) map[int64]bool {
	ids := make(map[int64]bool, len(p.rows)+len(p.bad))
	for i := range p.rows {
		ids[p.rows[i].ID] = true
	}
	for _, q := range p.bad {
		if id, err := strconv.ParseInt(q.ID, 10, 64); err == nil {
			ids[id] = true
		}
	}
	return ids
}

// errEarlierPage stops a page whose predecessor failed; the walk returns the
// predecessor's error.
var errEarlierPage = errors.New("an earlier page failed")

// writePage writes page number p: prepared at once, committed after prev
// (the page before it, nil when none in flight) has committed.
func (r *run) writePage(ctx context.Context, p normalizedPage, number int64, prev *pageWrite, isNew func(int64) bool) error {
	start := time.Now()
	pending, err := r.s.store.PrepareUsers(ctx, p.rows, p.bad, r.runID, isNew)
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			if pending != nil {
				pending.Rollback(ctx)
			}
			return errEarlierPage
		}
	}
	if err != nil {
		return fmt.Errorf("writing page %d: %w", number, err)
	}
	// The pages before this one have committed: the checkpoint is this
	// goroutine's until it closes done.
	r.cp.NextURL = jsonapi.CheckpointURL(p.page.NextURL)
	r.fillRequestCounters()
	if _, err := pending.Commit(ctx, &r.cp); err != nil {
		return fmt.Errorf("writing page %d: %w", number, err)
	}
	r.s.cfg.Logger.DebugContext(ctx, "page committed", "run_id", r.runID, "page", r.cp.Progress.Pages,
		"rows", len(p.rows)+len(p.bad), "write_ms", time.Since(start).Milliseconds())
	if r.s.cfg.Progress != nil {
		r.s.cfg.Progress(Progress{RunID: r.runID, Kind: r.req.Kind, Pages: r.cp.Progress.Pages,
			Rows: r.cp.Progress.Fetched, Elapsed: r.s.cfg.Now().Sub(r.started)})
	}
	return nil
}

// normalizedPage is a users page typed and hashed, ready to write.
type normalizedPage struct {
	page *jsonapi.Page
	rows []normalize.Row
	bad  []warehouse.Quarantined
	err  error
}

// normalizePages types and hashes each page in its own goroutine, so that
// work overlaps the database's. It holds at most one page besides the one
// it sends.
func (s *Syncer) normalizePages(ctx context.Context, in <-chan jsonapi.PageResult) <-chan normalizedPage {
	out := make(chan normalizedPage)
	go func() {
		defer close(out)
		for res := range in {
			p := normalizedPage{page: res.Page, err: res.Err}
			if res.Err == nil {
				p.rows, p.bad = s.typedUsers(res.Page)
				for i := range p.rows {
					p.rows[i].Hash()
					p.rows[i].LinkageHash()
				}
			}
			select {
			case out <- p:
			case <-ctx.Done():
				return
			}
			if res.Err != nil {
				return
			}
		}
	}()
	return out
}

// fillRequestCounters brings the checkpoint's request counters up to date:
// those of the resumed run plus this process's since the run began.
func (r *run) fillRequestCounters() {
	now := r.s.client.Stats()
	if r.base == nil {
		b := r.cp.Progress
		r.base = &b
	}
	r.cp.Progress.Requests = r.base.Requests + now.Requests - r.statsBefore.Requests
	r.cp.Progress.RateLimited = r.base.RateLimited + now.RateLimited - r.statsBefore.RateLimited
	r.cp.Progress.Retries = r.base.Retries + now.Retries - r.statsBefore.Retries
}

// decodeUsers is the users walk's jsonapi.DataDecoder: it types a page's
// resources in one pass over the body, while the page is fetched.
func (s *Syncer) decodeUsers(b []byte) (any, int, error) {
	return s.norm["user"].DecodeData(b)
}

// typedUsers returns the rows and quarantine records of a users page.
func (s *Syncer) typedUsers(page *jsonapi.Page) ([]normalize.Row, []warehouse.Quarantined) {
	rows, bad, _ := s.typed("user", page)
	return rows, bad
}

// typed returns the rows and quarantine records of a page of typ decoded
// by its Normalizer's DecodeData, and the resources quarantined.
func (s *Syncer) typed(typ string, page *jsonapi.Page) ([]normalize.Row, []warehouse.Quarantined, []jsonapi.Resource) {
	typed, ok := page.Decoded.(*normalize.Page)
	if !ok {
		// "data" was not an array.
		rows, bad, rejected := s.normalizeAll(typ, page.Data)
		return rows, bad, rejected
	}
	var bad []warehouse.Quarantined
	var rejected []jsonapi.Resource
	for _, r := range typed.Rejected {
		bad = append(bad, quarantine(typ, r.Resource, r.Err))
		rejected = append(rejected, r.Resource)
	}
	return typed.Rows, bad, rejected
}

// normalizeAll types resources; those that cannot be typed are returned as
// quarantine records with their error and the whole resource.
func (s *Syncer) normalizeAll(typ string, data []jsonapi.Resource) ([]normalize.Row, []warehouse.Quarantined, []jsonapi.Resource) {
	n := s.norm[typ]
	rows := make([]normalize.Row, 0, len(data))
	var bad []warehouse.Quarantined
	var rejected []jsonapi.Resource
	for i := range data {
		row, err := n.Row(data[i])
		if err != nil {
			bad = append(bad, quarantine(typ, data[i], err))
			rejected = append(rejected, data[i])
			continue
		}
		rows = append(rows, row)
	}
	return rows, bad, rejected
}

func quarantine(typ string, r jsonapi.Resource, err error) warehouse.Quarantined {
	q := warehouse.Quarantined{Type: typ, ID: fmt.Sprint(int64(r.ID)), Error: err.Error(), Raw: r.Raw}
	if len(q.Raw) == 0 {
		q.Raw = resourceJSON(r)
	}
	if !r.ID.Valid() {
		q.ID = gjson.GetBytes(r.Raw, "id").String() // the id as sent
	}
	var fe *normalize.FieldError
	if errors.As(err, &fe) {
		q.Field = fe.Field
	}
	return q
}

package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// usersQuery is the first request of a users walk over [from, until]:
// sorted by updatedAt, count=false (the client's default), page[size].
func (s *Syncer) usersQuery(from, until *time.Time) jsonapi.Query {
	q := s.UserQuery().Sort("updatedAt").PageSize(s.cfg.PageSize)
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
	fromLink := false
	switch {
	case r.resumed && r.cp.NextURL != "":
		pages, fromLink = r.s.client.Resume(r.cp.NextURL), true
	case r.resumed && r.cp.Progress.Pages > 0:
		return nil // the walk had ended; only finishing the run was left
	default:
		pages = r.s.client.Collection("users", r.s.usersQuery(r.from, r.until))
	}
	err := r.walk(ctx, pages)
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
// decoded and page N+1 normalized and hashed while page N is written.
func (r *run) walk(ctx context.Context, pages *jsonapi.Pages) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the pipeline's goroutines on an early return
	r.startPages = r.cp.Progress.Pages
	waitStart := time.Now()
	pages.DecodeData(r.s.decodeUsers)
	for p := range r.s.normalizePages(ctx, jsonapi.Prefetch(ctx, pages, r.s.cfg.Prefetch)) {
		if p.err != nil {
			return p.err // the client names the page and request
		}
		wait := time.Since(waitStart)
		if err := r.loadPage(ctx, p); err != nil {
			return err
		}
		r.s.cfg.Logger.DebugContext(ctx, "page committed", "run_id", r.runID, "page", r.cp.Progress.Pages,
			"rows", len(p.page.Data), "fetch_wait_ms", wait.Milliseconds(), "write_ms", time.Since(waitStart.Add(wait)).Milliseconds())
		if r.draining() && p.page.NextURL != "" {
			return ErrDrained
		}
		waitStart = time.Now()
	}
	return ctx.Err()
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

func (r *run) loadPage(ctx context.Context, p normalizedPage) error {
	rows, bad, page := p.rows, p.bad, p.page
	for i := range rows {
		if !rows[i].TeamsSent {
			r.noTeamsData++
		}
		if rows[i].CanWrite != nil {
			r.canWrite = rows[i].CanWrite // the API user's write access, as last seen
		}
	}
	r.cp.NextURL = page.NextURL
	r.fillRequestCounters()
	if _, err := r.s.store.LoadUsers(ctx, rows, bad, &r.cp); err != nil {
		return fmt.Errorf("writing page %d: %w", r.cp.Progress.Pages+1, err)
	}
	if r.s.cfg.Progress != nil {
		r.s.cfg.Progress(Progress{RunID: r.runID, Kind: r.req.Kind, Pages: r.cp.Progress.Pages,
			Rows: r.cp.Progress.Fetched, Elapsed: r.s.cfg.Now().Sub(r.started)})
	}
	return nil
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
	typed, ok := page.Decoded.(*normalize.Page)
	if !ok {
		return s.normalizeAll("user", page.Data) // "data" was not an array
	}
	var bad []warehouse.Quarantined
	for _, r := range typed.Rejected {
		bad = append(bad, quarantine("user", r.Resource, r.Err))
	}
	return typed.Rows, bad
}

// normalizeAll types resources; those that cannot be typed are returned as
// quarantine records with their error and the whole resource.
func (s *Syncer) normalizeAll(typ string, data []jsonapi.Resource) ([]normalize.Row, []warehouse.Quarantined) {
	n := s.norm[typ]
	rows := make([]normalize.Row, 0, len(data))
	var bad []warehouse.Quarantined
	for i := range data {
		row, err := n.Row(data[i])
		if err != nil {
			bad = append(bad, quarantine(typ, data[i], err))
			continue
		}
		rows = append(rows, row)
	}
	return rows, bad
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

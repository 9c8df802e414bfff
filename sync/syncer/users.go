package syncer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsondoc"
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

// FullUsersQuery is the first request of a users walk over every user, as
// a full sync or an unbounded backfill asks it (the bench records the API's
// answers to it, then replays them to a backfill).
func (s *Syncer) FullUsersQuery() jsonapi.Query { return s.usersQuery(nil, nil) }

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

// walkPage is one page of a users walk, typed, as the pipeline writes it.
type walkPage struct {
	rows []normalize.Row
	bad  []warehouse.Quarantined // resources that could not be typed
	// nextURL is the walk's next link as the checkpoint stores it ("" on
	// the last page): a resumed run continues from it.
	nextURL string
	release func() // nil: nothing to release
}

// ids returns the page's user ids, quarantined ones included.
func (p walkPage) ids() map[int64]bool {
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

// typedPage is a users or dimension page, its "data" typed by normalize
// while it was fetched (Normalizer.DecodeData).
type typedPage = jsonapi.TypedPage[*normalize.Page]

// typedWalk is a walk of typedPages fetched ahead of its reader.
type typedWalk = jsonapi.Prefetched[*normalize.Page]

// usersWalk is a run's users walk, started before the dimension pass (see
// startUsers).
type usersWalk struct {
	pages    *typedWalk
	fromLink bool // resumed from the checkpointed next link
}

// startUsers starts fetching the users of the run's range (or resumes the
// walk from the checkpointed next link), or returns nil when the walk had
// ended and only finishing the run was left. The stored link is rebuilt as
// a new one is (Client.CheckpointURL), since an older version stored next
// links as the API sent them; one that does not parse restarts the range.
func (r *run) startUsers(ctx context.Context) *usersWalk {
	switch {
	case r.resumed && r.cp.NextURL != "":
		if next, err := r.s.client.CheckpointURL("users", r.cp.NextURL); err == nil {
			return &usersWalk{pages: r.prefetch(ctx, r.s.client.Resume(next)), fromLink: true}
		}
	case r.resumed && r.cp.Progress.Pages > 0:
		return nil
	}
	return &usersWalk{pages: r.usersPages(ctx, r.from)}
}

// usersPages starts a walk over the users updated from from to the run's
// range's end.
func (r *run) usersPages(ctx context.Context, from *time.Time) *typedWalk {
	return r.prefetch(ctx, r.s.client.Collection("users", r.s.usersQuery(from, r.until)))
}

// prefetch starts fetching a users walk's pages ahead of the writers, each
// typed as it is read off the wire.
func (r *run) prefetch(ctx context.Context, pages *jsonapi.Pages) *typedWalk {
	return jsonapi.Prefetch(ctx, jsonapi.DecodeData(pages, r.s.decodeUsers), r.s.cfg.Prefetch)
}

// syncUsers hands each page of the walk started by startUsers to the run's
// pipeline, which writes it in one transaction with the checkpoint; a walk
// refused at its first request is walked again as it can be.
func (r *run) syncUsers(ctx context.Context, first *usersWalk) error {
	if first == nil {
		return nil
	}
	deferred, err := r.s.users.StartLoad(ctx, r.s.cfg.Logger)
	if err != nil {
		return err
	}
	pipe := r.usersPipeline(ctx)
	startPages := r.cp.Progress.Pages
	committedNone := func() bool { return pipe.Checkpoint().Progress.Pages == startPages }
	err = r.walk(ctx, pipe, first.pages)
	if err != nil && !first.fromLink && committedNone() && r.s.refusedInclude(ctx, err) {
		err = r.walk(ctx, pipe, r.usersPages(ctx, r.from))
	}
	if err != nil && first.fromLink && committedNone() && isStaleCursor(err) {
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
		err = r.walk(ctx, pipe, r.usersPages(ctx, from))
		if err != nil && committedNone() && r.s.refusedInclude(ctx, err) {
			err = r.walk(ctx, pipe, r.usersPages(ctx, from))
		}
	}
	return r.endUsers(ctx, pipe, deferred, err)
}

// endUsers waits for the pipeline's pages, takes the checkpoint after the
// last one committed, and builds the team index if StartLoad deferred it
// (even when the walk failed). err is the walk's error; the pages' and the
// index's are added to it, each once.
func (r *run) endUsers(ctx context.Context, pipe *pipeline, deferred bool, err error) error {
	werr := pipe.Wait()
	ierr := r.s.users.EndLoad(ctx, r.s.cfg.Logger, deferred) // once the pages are in
	for _, e := range []error{werr, ierr} {
		switch {
		case err == nil:
			err = e
		case e != nil && !errors.Is(err, e):
			err = errors.Join(err, e)
		}
	}
	r.cp = pipe.Checkpoint()
	return err
}

// usersPipeline returns the run's users pipeline: its writers, the request
// counters each checkpoint stores, and progress after each page.
func (r *run) usersPipeline(ctx context.Context) *pipeline {
	p := newPipeline(r.s.users, r.cp, r.s.cfg.Writers)
	p.requests = r.fillRequests
	p.committed = func(cp warehouse.Checkpoint, rows int, took time.Duration) {
		r.s.cfg.Logger.DebugContext(ctx, "page committed", "run_id", r.runID, "page", cp.Progress.Pages, "rows", rows, "write_ms", took.Milliseconds())
		if r.s.cfg.Progress != nil {
			r.s.cfg.Progress(Progress{RunID: r.runID, Kind: r.req.Kind, Pages: cp.Progress.Pages,
				Rows: cp.Progress.Fetched, Elapsed: r.s.cfg.Now().Sub(r.started)})
		}
	}
	return p
}

func (r *run) draining() bool { return closed(r.req.Drain) }

// walk reads the pages of a prefetched walk and hands them to pipe. It
// returns once every page it handed over has been written or has failed,
// and the walk has stopped.
func (r *run) walk(ctx context.Context, pipe *pipeline, pages *typedWalk) error {
	defer func() { _ = pipe.Wait() }()
	for p, err := range pages.Pages() {
		if failed := pipe.Failed(); failed != nil {
			return failed
		}
		if err != nil {
			if failed := pipe.Wait(); failed != nil {
				return failed
			}
			return err // the client names the page and request, or the walk was cancelled
		}
		rows, bad := r.s.typedUsers(p)
		r.count(rows)
		if p.Number == 1 && p.NextURL == "" && len(bad) == 0 && r.req.Kind == warehouse.KindIncremental {
			r.page = pageDigest(rows, r.policyID)
		}
		next, err := r.s.client.CheckpointURL("users", p.NextURL)
		if err != nil {
			p.Release()
			return fmt.Errorf("checkpointing users page %d: %w", p.Number, err)
		}
		if err := pipe.Add(ctx, walkPage{rows: rows, bad: bad, nextURL: next, release: p.Release}); err != nil {
			return err
		}
		if p.NextURL != "" && r.draining() {
			if err := pipe.Wait(); err != nil {
				return err
			}
			return ErrDrained
		}
	}
	return pipe.Wait()
}

// count notes what the run reports of a page's users besides the writes.
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

// decodeUsers is the users walk's jsondoc.DataDecoder: it types a page's
// resources in one pass over the body, while the page is fetched.
func (s *Syncer) decodeUsers(b []byte) (*normalize.Page, int, error) {
	return s.norm["user"].DecodeData(b)
}

// typedUsers returns the rows and quarantine records of a users page.
func (s *Syncer) typedUsers(page *typedPage) ([]normalize.Row, []warehouse.Quarantined) {
	rows, bad, _ := s.typed("user", page)
	return rows, bad
}

// typed returns the rows and quarantine records of a page of typ decoded
// by its Normalizer's DecodeData, and the resources quarantined.
func (s *Syncer) typed(typ string, page *typedPage) ([]normalize.Row, []warehouse.Quarantined, []jsondoc.Resource) {
	typed := page.Decoded
	if typed == nil {
		// "data" was not an array.
		rows, bad, rejected := s.normalizeAll(typ, page.Data)
		return rows, bad, rejected
	}
	var bad []warehouse.Quarantined
	var rejected []jsondoc.Resource
	for _, r := range typed.Rejected {
		bad = append(bad, s.quarantine(typ, r.Resource, r.Err))
		rejected = append(rejected, r.Resource)
	}
	return typed.Rows, bad, rejected
}

// normalizeAll types resources; those that cannot be typed are returned as
// quarantine records with their error and the whole resource.
func (s *Syncer) normalizeAll(typ string, data []jsondoc.Resource) ([]normalize.Row, []warehouse.Quarantined, []jsondoc.Resource) {
	n := s.norm[typ]
	rows := make([]normalize.Row, 0, len(data))
	var bad []warehouse.Quarantined
	var rejected []jsondoc.Resource
	for i := range data {
		row, err := n.Row(data[i])
		if err != nil {
			bad = append(bad, s.quarantine(typ, data[i], err))
			rejected = append(rejected, data[i])
			continue
		}
		rows = append(rows, row)
	}
	return rows, bad, rejected
}

// quarantine is the quarantine record of a resource that could not be
// typed; a user's is redacted to the personal-data policy first.
func (s *Syncer) quarantine(typ string, r jsondoc.Resource, err error) warehouse.Quarantined {
	q := warehouse.Quarantined{Type: typ, ID: fmt.Sprint(int64(r.ID)), Error: err.Error(), Raw: r.Raw}
	if len(q.Raw) == 0 {
		q.Raw = resourceJSON(r)
	}
	if typ == "user" {
		q.Raw = s.cfg.Policy.RedactResource(q.Raw)
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

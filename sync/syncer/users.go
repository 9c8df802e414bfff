package syncer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsondoc"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
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

// usersWalk is a run's users walk, started before the dimension pass (see
// startUsers).
type usersWalk struct {
	pages    *jsonapi.Prefetched
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
func (r *run) usersPages(ctx context.Context, from *time.Time) *jsonapi.Prefetched {
	return r.prefetch(ctx, r.s.client.Collection("users", r.s.usersQuery(from, r.until)))
}

// prefetch starts fetching a users walk's pages ahead of the writers, each
// typed as it is read off the wire.
func (r *run) prefetch(ctx context.Context, pages *jsonapi.Pages) *jsonapi.Prefetched {
	return jsonapi.Prefetch(ctx, pages.DecodeData(r.s.decodeUsers), r.s.cfg.Prefetch)
}

// syncUsers hands each page of the walk started by startUsers to a
// users.Load, which writes it in one transaction with the
// checkpoint; a walk refused at its first request is walked again as
// it can be.
func (r *run) syncUsers(ctx context.Context, first *usersWalk) error {
	if first == nil {
		return nil
	}
	load, err := r.s.users.Begin(ctx, r.cp, r.loadOptions(ctx))
	if err != nil {
		return err
	}
	startPages := r.cp.Progress.Pages
	committedNone := func() bool { return load.Checkpoint().Progress.Pages == startPages }
	err = r.walk(ctx, load, first.pages)
	if err != nil && !first.fromLink && committedNone() && r.s.refusedInclude(ctx, err) {
		err = r.walk(ctx, load, r.usersPages(ctx, r.from))
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
		err = r.walk(ctx, load, r.usersPages(ctx, from))
		if err != nil && committedNone() && r.s.refusedInclude(ctx, err) {
			err = r.walk(ctx, load, r.usersPages(ctx, from))
		}
	}
	cp, ferr := load.Finish(ctx)
	r.cp = cp
	if err == nil {
		err = ferr
	} else if ferr != nil && !errors.Is(err, ferr) {
		err = errors.Join(err, ferr)
	}
	return err
}

// loadOptions configures the run's users.Load: its writers, the
// request counters each checkpoint stores, and progress after each page.
func (r *run) loadOptions(ctx context.Context) users.Options {
	return users.Options{
		Writers:  r.s.cfg.Writers,
		Logger:   r.s.cfg.Logger,
		Requests: r.fillRequests,
		Committed: func(cp warehouse.Checkpoint, rows int, took time.Duration) {
			r.s.cfg.Logger.DebugContext(ctx, "page committed", "run_id", r.runID, "page", cp.Progress.Pages, "rows", rows, "write_ms", took.Milliseconds())
			if r.s.cfg.Progress != nil {
				r.s.cfg.Progress(Progress{RunID: r.runID, Kind: r.req.Kind, Pages: cp.Progress.Pages,
					Rows: cp.Progress.Fetched, Elapsed: r.s.cfg.Now().Sub(r.started)})
			}
		},
	}
}

func (r *run) draining() bool { return closed(r.req.Drain) }

// walk reads the pages of a prefetched walk and hands them to load. It
// returns once every page it handed over has been written or has failed,
// and the walk has stopped.
func (r *run) walk(ctx context.Context, load *users.Load, pages *jsonapi.Prefetched) error {
	defer func() { _ = load.Wait() }()
	for p, err := range pages.Pages() {
		if failed := load.Failed(); failed != nil {
			return failed
		}
		if err != nil {
			if failed := load.Wait(); failed != nil {
				return failed
			}
			return err // the client names the page and request, or the walk was cancelled
		}
		rows, bad := r.s.typedUsers(p)
		r.count(rows)
		next, err := r.s.client.CheckpointURL("users", p.NextURL)
		if err != nil {
			p.Release()
			return fmt.Errorf("checkpointing users page %d: %w", p.Number, err)
		}
		page := users.Page{Rows: rows, Bad: bad, NextURL: next, Release: p.Release}
		if err := load.Add(ctx, page); err != nil {
			return err
		}
		if p.NextURL != "" && r.draining() {
			if err := load.Wait(); err != nil {
				return err
			}
			return ErrDrained
		}
	}
	return load.Wait()
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

// decodeUsers is the users walk's jsondoc.DataDecoder: it types a page's
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
func (s *Syncer) typed(typ string, page *jsonapi.Page) ([]normalize.Row, []warehouse.Quarantined, []jsondoc.Resource) {
	typed, ok := page.Decoded.(*normalize.Page)
	if !ok {
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

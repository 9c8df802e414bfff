package syncer

import (
	"context"
	"fmt"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/dimensions"
)

// dimensionQuery lists a dimension in full with sparse fields: its catalog
// attributes and to-one relationships only. A team's `users` linkage can be
// large and is not needed (membership comes from the users' side).
func (s *Syncer) dimensionQuery(res schema.Resource) jsonapi.Query {
	fields := make([]string, 0, len(res.Attributes)+len(res.Relationships))
	for _, a := range res.Attributes {
		fields = append(fields, a.Name)
	}
	for _, rel := range res.ToOne() {
		fields = append(fields, rel.Name)
	}
	return jsonapi.Query{}.Fields(res.Type, fields...).PageSize(1000)
}

// dimensionPass says how a run writes the dimension lists: under which
// run and personal-data policy, and whether a list equal to the one applied
// last may be skipped (an incremental sync; a full sync and a reconcile
// apply every list, which also heals a table changed behind the sync's back).
type dimensionPass struct {
	runID, policyID int64
	trustDigests    bool
}

// heldPages bounds the pages of a dimension list held in memory, before
// anything is staged, to compare the whole list with the one applied last:
// a longer list is staged as it arrives, as when nothing is trusted.
const heldPages = 4

// dimensionPage is one typed page of a dimension list.
type dimensionPage struct {
	rows    []normalize.Row
	bad     []warehouse.Quarantined
	present []int64 // every id listed, quarantined ones included
}

// syncDimensions lists the catalog's dimensions (teams, roles, profiles)
// fully and writes each in one transaction, marking ids that disappeared
// deleted. The lists are asked for at once, each fetching a page ahead of
// the one being staged, so a run does not wait for the roles and profiles
// requests behind the teams list; they are staged and applied one after the other, on one
// connection, and a list that fails stops the pass. A list whose digest is
// the one applied last is not written at all when pass trusts digests.
func (s *Syncer) syncDimensions(ctx context.Context, pass dimensionPass) (map[string]warehouse.Counts, error) {
	dims := schema.Dimensions()
	lists := s.startLists(ctx)
	for _, l := range lists {
		defer l.Stop() // the lists not read, on an early return
	}
	var stored map[string][]byte
	if pass.trustDigests {
		var err error
		if stored, err = s.dims.Digests(ctx); err != nil {
			return nil, err
		}
	}
	out := make(map[string]warehouse.Counts, len(dims))
	for i, res := range dims {
		c, err := s.syncDimension(ctx, res, lists[i], pass, stored[res.Table])
		if err != nil {
			return nil, err
		}
		out[res.Table] = c
	}
	return out, nil
}

// startLists starts listing every dimension at once, each a page ahead
// of its reader, typed as users pages are, one resource at a time: one
// that cannot be stored (or is nested too deep for the JSON decoder) goes
// to quarantine, never fails the list.
func (s *Syncer) startLists(ctx context.Context) []*typedWalk {
	dims := schema.Dimensions()
	lists := make([]*typedWalk, len(dims))
	for i, res := range dims {
		pages := jsonapi.DecodeData(s.client.Collection(res.Path, s.dimensionQuery(res)), s.norm[res.Type].DecodeData)
		lists[i] = jsonapi.Prefetch(ctx, pages, 1)
	}
	return lists
}

// syncDimension streams one dimension's list into the warehouse: each page
// is typed and staged as it arrives, and the whole list is applied in one
// transaction once the last page has been staged (see
// dimensions.Load), so memory holds a page and the one fetched
// ahead however long the list. A list that fails part way applies nothing.
// When pass trusts digests, up to heldPages pages are held before staging:
// a list that ends within them with the digest stored is left as it is.
func (s *Syncer) syncDimension(ctx context.Context, res schema.Resource, list *typedWalk, pass dimensionPass,
	stored []byte) (warehouse.Counts, error) {
	digest := newListDigest(res, pass.policyID)
	var held []dimensionPage
	var load *dimensions.Load
	defer func() { load.Close() }()
	var err error
	if !pass.trustDigests {
		if load, err = s.beginDimension(ctx, res, pass.runID, nil); err != nil {
			return warehouse.Counts{}, err
		}
	}
	for page, err := range list.Pages() {
		if err != nil {
			return warehouse.Counts{}, fmt.Errorf("listing %s: %w", res.Path, err)
		}
		p := s.dimensionPage(res.Type, page, digest)
		if load == nil && len(held) < heldPages {
			held = append(held, p)
			continue
		}
		if load == nil {
			if load, err = s.beginDimension(ctx, res, pass.runID, held); err != nil {
				return warehouse.Counts{}, err
			}
			held = nil
		}
		if err := load.Page(ctx, p.rows, p.bad, p.present); err != nil {
			return warehouse.Counts{}, err
		}
	}
	if load == nil {
		if digest.sameAs(stored) {
			return warehouse.Counts{Unchanged: int64(len(digest.typed)), Quarantined: digest.bad}, nil
		}
		if load, err = s.beginDimension(ctx, res, pass.runID, held); err != nil {
			return warehouse.Counts{}, err
		}
	}
	load.SetDigest(digest.sum())
	return s.finishDimension(ctx, load)
}

// beginDimension begins the load of a dimension list and stages the pages
// held so far.
func (s *Syncer) beginDimension(ctx context.Context, res schema.Resource, runID int64, held []dimensionPage) (*dimensions.Load, error) {
	load, err := s.dims.Begin(ctx, res.Type, runID)
	if err != nil {
		return nil, err
	}
	for _, p := range held {
		if err := load.Page(ctx, p.rows, p.bad, p.present); err != nil {
			load.Close()
			return nil, err
		}
	}
	return load, nil
}

// dimensionPage types a page of a dimension list and notes it in digest.
func (s *Syncer) dimensionPage(typ string, page *typedPage, digest *listDigest) dimensionPage {
	rows, bad, rejected := s.typed(typ, page)
	p := dimensionPage{rows: rows, bad: bad, present: make([]int64, 0, len(rows)+len(bad))}
	for i := range rows {
		p.present = append(p.present, rows[i].ID)
		digest.addRow(&rows[i])
	}
	for i := range rejected {
		p.present = append(p.present, int64(rejected[i].ID))
		digest.addBad(int64(rejected[i].ID), bad[i])
	}
	return p
}

// finishDimension applies a staged list.
func (s *Syncer) finishDimension(ctx context.Context, load *dimensions.Load) (warehouse.Counts, error) {
	// A team that comes back had its memberships ended with its deletion,
	// and users may have joined or left it meanwhile: only its members'
	// listing says who is in it now (one request or more per such team),
	// applied with the list.
	returning, err := load.ReturningTeams(ctx)
	if err != nil {
		return warehouse.Counts{}, err
	}
	for _, team := range returning {
		members, err := s.teamMembers(ctx, team)
		if err != nil {
			return warehouse.Counts{}, err
		}
		load.Members(team, members)
	}
	return load.Finish(ctx)
}

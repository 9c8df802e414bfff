package syncer

import (
	"context"
	"fmt"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
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

// syncDimensions lists teams, roles and profiles fully and writes each in one
// transaction, marking ids that disappeared deleted. The three lists are
// asked for at once, each fetching a page ahead of the one being staged,
// so a run does not wait for the roles and profiles requests behind the
// teams list; they are staged and applied one after the other, on one
// connection, and a list that fails stops the pass.
func (s *Syncer) syncDimensions(ctx context.Context, runID int64) (map[string]warehouse.Counts, error) {
	dims := []schema.Resource{schema.Team(), schema.Role(), schema.Profile()}
	lists := make([]*jsonapi.Prefetched, len(dims))
	for i, res := range dims {
		// Typed as users pages are, one resource at a time: one that cannot
		// be stored (or is nested too deep for the JSON decoder) goes to
		// quarantine, never fails the list.
		pages := s.client.Collection(res.Path, s.dimensionQuery(res)).DecodeData(s.norm[res.Type].DecodeData)
		lists[i] = jsonapi.Prefetch(ctx, pages, 1)
		defer lists[i].Stop() // the lists not read, on an early return
	}
	out := make(map[string]warehouse.Counts, len(dims))
	for i, res := range dims {
		c, err := s.syncDimension(ctx, res, lists[i], runID)
		if err != nil {
			return nil, err
		}
		out[res.Table] = c
	}
	return out, nil
}

// syncDimension streams one dimension's list into the warehouse: each page
// is typed and staged as it arrives, and the whole list is applied in one
// transaction once the last page has been staged (see
// dimensions.Load), so memory holds a page and the one fetched
// ahead however long the list. A list that fails part way applies nothing.
func (s *Syncer) syncDimension(ctx context.Context, res schema.Resource, list *jsonapi.Prefetched, runID int64) (warehouse.Counts, error) {
	load, err := s.dims.Begin(ctx, res.Type, runID)
	if err != nil {
		return warehouse.Counts{}, err
	}
	defer load.Close()
	for page, err := range list.Pages() {
		if err != nil {
			return warehouse.Counts{}, fmt.Errorf("listing %s: %w", res.Path, err)
		}
		rows, bad, rejected := s.typed(res.Type, page)
		present := make([]int64, 0, len(rows)+len(bad))
		for i := range rows {
			present = append(present, rows[i].ID)
		}
		for i := range rejected {
			present = append(present, int64(rejected[i].ID))
		}
		if err := load.Page(ctx, rows, bad, present); err != nil {
			return warehouse.Counts{}, err
		}
	}
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

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
// transaction, marking ids that disappeared deleted.
func (s *Syncer) syncDimensions(ctx context.Context, runID int64) (map[string]warehouse.Counts, error) {
	out := map[string]warehouse.Counts{}
	for _, res := range []schema.Resource{schema.Team(), schema.Role(), schema.Profile()} {
		var data []jsonapi.Resource
		pages := s.client.Collection(res.Path, s.dimensionQuery(res))
		for {
			page, err := pages.Next(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", res.Path, err)
			}
			if page == nil {
				break
			}
			data = append(data, page.Data...)
		}
		rows, bad := s.normalizeAll(res.Type, data)
		present := make([]int64, 0, len(data))
		for _, d := range data {
			present = append(present, int64(d.ID))
		}
		c, err := s.store.LoadDimension(ctx, res.Type, rows, bad, present, runID)
		if err != nil {
			return nil, err
		}
		out[res.Table] = c
	}
	return out, nil
}

package syncer

import (
	"context"
	"fmt"

	"github.com/usersync/usersync/sync/jsonapi"
)

// MembershipSummary is what a per-team membership pass did.
type MembershipSummary struct {
	Teams   int   `json:"teams"`
	Members int64 `json:"members"`
	Added   int64 `json:"added"`
	Removed int64 `json:"removed"`
	// Absent counts members not in the warehouse's users (created after the
	// run's users pass): the next sync writes them and lists membership
	// again.
	Absent int64 `json:"absent"`
}

// syncMembership rebuilds user_teams team by team, for APIs that send a
// user's teams relationship without data: one walk of users per live team
// with filter[teams][id] and no attributes (fields[user]=), ids only.
func (s *Syncer) syncMembership(ctx context.Context) (MembershipSummary, error) {
	var sum MembershipSummary
	teams, err := s.store.LiveTeamIDs(ctx)
	if err != nil {
		return sum, err
	}
	for _, team := range teams {
		q := jsonapi.Query{}.FilterRelationship("teams", team).Fields("user").PageSize(1000)
		var members []int64
		pages := s.client.Collection("users", q)
		for {
			page, err := pages.Next(ctx)
			if err != nil {
				return sum, fmt.Errorf("listing members of team %d: %w", team, err)
			}
			if page == nil {
				break
			}
			for _, u := range page.Data {
				members = append(members, int64(u.ID))
			}
		}
		added, removed, absent, err := s.store.ReplaceTeamMembers(ctx, team, members)
		if err != nil {
			return sum, err
		}
		sum.Teams++
		sum.Members += int64(len(members))
		sum.Added += added
		sum.Removed += removed
		sum.Absent += absent
	}
	return sum, nil
}

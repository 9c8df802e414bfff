package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

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
	// Deferred counts the users an incremental sync received without their
	// team ids (an API that refuses include=teams): their membership is
	// listed by the next reconcile, not by listing every team now.
	Deferred int64 `json:"deferred,omitempty"`
}

// syncMembership rebuilds user_teams team by team, for APIs that send a
// user's teams relationship without data: one walk of users per live team
// with filter[teams][id] and no attributes (fields[user]=), ids only.
func (s *Syncer) syncMembership(ctx context.Context) (MembershipSummary, error) {
	var sum MembershipSummary
	teams, err := s.dims.LiveTeamIDs(ctx)
	if err != nil {
		return sum, err
	}
	for _, team := range teams {
		n, added, removed, absent, err := s.listTeamMembers(ctx, team)
		if err != nil {
			return sum, err
		}
		sum.Teams++
		sum.Members += n
		sum.Added += added
		sum.Removed += removed
		sum.Absent += absent
	}
	return sum, nil
}

// listTeamMembers lists the members of one team and makes user_teams hold
// them (see dimensions.Store.ReplaceTeamMembers); n is how many were listed.
func (s *Syncer) listTeamMembers(ctx context.Context, team int64) (n, added, removed, absent int64, err error) {
	members, err := s.teamMembers(ctx, team)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	added, removed, absent, err = s.dims.ReplaceTeamMembers(ctx, team, members)
	return int64(len(members)), added, removed, absent, err
}

// teamMembers lists the ids of the members of one team: one walk of users
// with filter[teams][id] and no attributes (fields[user]=).
func (s *Syncer) teamMembers(ctx context.Context, team int64) ([]int64, error) {
	q := jsonapi.Query{}.FilterRelationship("teams", team).Fields("user").PageSize(1000)
	var members []int64
	pages := s.client.Collection("users", q)
	for {
		page, err := pages.Next(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing members of team %d: %w", team, err)
		}
		if page == nil {
			return members, nil
		}
		for _, u := range page.Data {
			members = append(members, int64(u.ID))
		}
	}
}

// teamLinkage remembers whether the API refused include=teams. Users
// requests ask for it: JSON:API requires full linkage in a compound document
// (a resource in included is always identified in the primary data's
// relationships), so include=teams with an empty fields[team] brings the
// team ids of an API that otherwise sends the relationship as links only,
// at no extra request and a few bytes per team. An API that answers 400 to
// it is asked without it from then on; team membership then comes from
// per-team listings, which incremental syncs leave to the next reconcile.
type teamLinkage struct {
	refused atomic.Bool
}

// withTeams adds include=teams to q unless the API refused it.
func (s *Syncer) withTeams(q jsonapi.Query) jsonapi.Query {
	if s.linkage.refused.Load() {
		return q
	}
	return q.Include("teams").Fields("team")
}

// refusedInclude says whether err is the API refusing include=teams, and
// remembers it; a refusal seen again (or another error) returns false.
func (s *Syncer) refusedInclude(ctx context.Context, err error) bool {
	var re *jsonapi.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || !mentionsInclude(re) || s.linkage.refused.Swap(true) {
		return false
	}
	s.cfg.Logger.WarnContext(ctx, "the API refuses include=teams: team membership comes from per-team listings, in reconciles and full syncs only",
		"error", err.Error())
	return true
}

func mentionsInclude(re *jsonapi.ResponseError) bool {
	for _, e := range re.Errors {
		if e.Source.Parameter == "include" || strings.Contains(strings.ToLower(e.Detail+e.Title+e.ID+e.Code), "include") {
			return true
		}
	}
	return false
}

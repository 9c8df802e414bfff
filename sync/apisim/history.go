package apisim

import (
	"fmt"
	"slices"
)

// Mutations that give the warehouse a history to keep: membership changes,
// renames and re-parenting. Each moves the changed resource's updatedAt, as
// the real service does for an edit.

// SetMembership adds the user to the team (member true) or removes it. The
// user's updatedAt moves; its attributes do not change. Adding a user that
// already has the most teams a user may have (4) fails, as does a team that
// does not exist.
func (s *Server) SetMembership(user, team int64, member bool) error {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, err := s.userID(user)
	if err != nil {
		return fmt.Errorf("changing membership: %w", err)
	}
	if _, err := s.smallByID(kindTeam, team); err != nil {
		return fmt.Errorf("changing membership: %w", err)
	}
	if err := s.setMembershipLocked(uid, uint32(team), member); err != nil {
		return err
	}
	s.data.setUpdatedAt(uid, max(now, s.data.user(uid).updatedAt+1))
	return nil
}

func (s *Server) setMembershipLocked(uid, team uint32, member bool) error {
	st := s.data.user(uid)
	teams := slices.DeleteFunc(slices.Clone(st.teams[:st.nTeams]), func(t uint32) bool { return t == team })
	if member {
		if len(teams) == maxTeamsPerUser {
			return fmt.Errorf("changing membership: user %d already has %d teams", uid, maxTeamsPerUser)
		}
		teams = append(teams, team)
	}
	clear(st.teams[:])
	st.nTeams = uint8(copy(st.teams[:], teams))
	return nil
}

// Rename gives a team, role or profile a new name (updatedAt moves).
func (s *Server) Rename(typ string, id int64, name string) error {
	kind, err := s.kindOf(typ, false)
	if err != nil {
		return err
	}
	return s.editSmall(kind, id, name, -1)
}

// SetRoleParent makes parent the parent role of role (0: none); updatedAt
// moves. A parent that would make a cycle is refused.
func (s *Server) SetRoleParent(role, parent int64) error {
	return s.editSmall(kindRole, role, "", parent)
}

// editSmall renames rec (name not empty) and, for parent >= 0, re-parents a
// role; the other attributes keep their values.
func (s *Server) editSmall(kind resKind, id int64, name string, parent int64) error {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.smallByID(kind, id)
	if err != nil {
		return fmt.Errorf("editing: %w", err)
	}
	if parent >= 0 {
		if err := s.checkParentLocked(uint32(id), uint32(parent)); err != nil {
			return err
		}
		rec.parent = uint32(parent)
	}
	if name != "" {
		rec.name = name
	}
	rec.updatedAt = max(now, rec.updatedAt+1)
	// Re-rendered at the same version: only the name changes.
	s.encodeSmall(kind, rec)
	return nil
}

// checkParentLocked refuses a parent that does not exist or whose chain of
// parents leads back to role.
func (s *Server) checkParentLocked(role, parent uint32) error {
	for p, n := parent, 0; p != 0; n++ {
		rec := s.data.smallRec(kindRole, p)
		if rec == nil {
			return fmt.Errorf("re-parenting role %d: role %d: %w", role, p, ErrNotFound)
		}
		if p == role || n > len(s.data.small(kindRole)) {
			return fmt.Errorf("re-parenting role %d under %d would make a cycle", role, parent)
		}
		p = rec.parent
	}
	return nil
}

// churnHistoryLocked runs the history part of one churn round: c.Memberships
// users join or leave a team, and every c.EditEvery rounds a team, role or
// profile in turn is renamed (a role is also re-parented), and every
// c.RestoreEvery rounds a deleted team, role or profile comes back. It
// returns what it did, for the debug log.
func (s *Server) churnHistoryLocked(c Churn, now int64) (moved int, edited, restored string) {
	for range c.Memberships {
		if s.churnMembershipLocked(now) {
			moved++
		}
	}
	round := s.churnRounds
	if c.EditEvery > 0 && round%c.EditEvery == 0 {
		edited = s.editOneLocked(s.nthDimension(round/c.EditEvery-1), now)
	}
	if c.RestoreEvery > 0 && round%c.RestoreEvery == 0 {
		restored = s.restoreOneLocked(s.nthDimension(round/c.RestoreEvery - 1))
	}
	return moved, edited, restored
}

// churnMembershipLocked moves a random live user into, or out of, a random
// team; it reports whether the user changed.
func (s *Server) churnMembershipLocked(now int64) bool {
	if len(s.data.users) == 0 || len(s.data.small(kindTeam)) == 0 {
		return false
	}
	uid := uint32(1 + s.mutRNG.intn(len(s.data.users)))
	st := s.data.user(uid)
	if st.deleted {
		return false
	}
	team := uint32(1 + s.mutRNG.intn(len(s.data.small(kindTeam))))
	member := !slices.Contains(st.teams[:st.nTeams], team)
	if s.setMembershipLocked(uid, team, member) != nil {
		return false
	}
	s.data.setUpdatedAt(uid, max(now, st.updatedAt+1))
	return true
}

// editOneLocked renames a random live team, role or profile (a role also
// gets another parent, or none); it returns "role 7" or "".
func (s *Server) editOneLocked(kind resKind, now int64) string {
	recs := s.data.small(kind)
	if len(recs) == 0 {
		return ""
	}
	rec := &recs[s.mutRNG.intn(len(recs))]
	if rec.deleted {
		return ""
	}
	rec.name = fmt.Sprintf("%s (renamed %d)", rec.name, s.churnRounds)
	if parent := uint32(s.mutRNG.intn(int(rec.id))); kind == kindRole && s.checkParentLocked(rec.id, parent) == nil {
		rec.parent = parent // 0: none
	}
	rec.updatedAt = max(now, rec.updatedAt+1)
	s.encodeSmall(kind, rec)
	return fmt.Sprintf("%s %d", s.types[kind].name, rec.id)
}

// restoreOneLocked brings back a random deleted team, role or profile; it
// returns "team 7" or "".
func (s *Server) restoreOneLocked(kind resKind) string {
	recs := s.data.small(kind)
	var deleted []int
	for i := range recs {
		if recs[i].deleted {
			deleted = append(deleted, i)
		}
	}
	if len(deleted) == 0 {
		return ""
	}
	rec := &recs[deleted[s.mutRNG.intn(len(deleted))]]
	rec.deleted = false
	return fmt.Sprintf("%s %d", s.types[kind].name, rec.id)
}

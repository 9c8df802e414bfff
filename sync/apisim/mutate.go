package apisim

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned by mutations of an id that does not exist.
var ErrNotFound = errors.New("apisim: no such resource")

// Mutations change the dataset the way the real service's users do. An
// update bumps the resource's version (so some attributes change) and moves
// its updatedAt to the clock's now (at least one millisecond past the old
// value). Deletes and restores do NOT touch updatedAt, neither of the
// resource nor of the users pointing at it: a deleted team simply vanishes
// from every user's teams, which only a full reconcile can notice.

func (s *Server) userID(id int64) (uint32, error) {
	if id <= 0 || id > int64(len(s.data.users)) {
		return 0, fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	return uint32(id), nil
}

// updateUserLocked updates one user; s.mu is held for writing.
func (s *Server) updateUserLocked(id uint32, now int64) {
	st := s.data.user(id)
	st.version++
	r := s.seeded(saltMembership, uint64(id), uint64(st.version))
	if r.chance(0.25) {
		s.drawMemberships(st, r)
	}
	s.data.setUpdatedAt(id, max(now, st.updatedAt+1))
}

// UpdateUser updates the user id (deleted users too: they stay deleted).
func (s *Server) UpdateUser(id int64) error {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, err := s.userID(id)
	if err != nil {
		return fmt.Errorf("updating user: %w", err)
	}
	s.updateUserLocked(uid, now)
	return nil
}

// UpdateUsers updates n live users picked at random (from an RNG seeded
// with Options.Seed) and returns their ids. They all get the same updatedAt,
// the clock's now, as a bulk change in the real service would.
func (s *Server) UpdateUsers(n int) []int64 {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateUsersLocked(n, now)
}

func (s *Server) updateUsersLocked(n int, now int64) []int64 {
	live := 0
	for i := range s.data.users {
		if !s.data.users[i].deleted {
			live++
		}
	}
	n = min(n, live)
	picked := make(map[uint32]bool, n)
	out := make([]int64, 0, n)
	for len(out) < n {
		id := uint32(1 + s.mutRNG.intn(len(s.data.users)))
		if picked[id] || s.data.users[id-1].deleted {
			continue
		}
		picked[id] = true
		s.updateUserLocked(id, now)
		out = append(out, int64(id))
	}
	return out
}

// CreateUsers adds n users, created just now, and returns their ids.
func (s *Server) CreateUsers(n int) []int64 {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createUsersLocked(n, now)
}

func (s *Server) createUsersLocked(n int, now int64) []int64 {
	out := make([]int64, 0, n)
	for range n {
		id := uint32(len(s.data.users) + 1)
		st := s.newUserState(id, now-1000, now)
		s.data.users = append(s.data.users, st)
		s.data.indexInsert(st.updatedAt, id)
		out = append(out, int64(id))
	}
	return out
}

// DeleteUser removes a user from every response (the real API cannot
// delete users; reconcile tests need one to disappear).
func (s *Server) DeleteUser(id int64) error { return s.setUserDeleted(id, true) }

// RestoreUser brings a deleted user back, with its old updatedAt.
func (s *Server) RestoreUser(id int64) error { return s.setUserDeleted(id, false) }

func (s *Server) setUserDeleted(id int64, deleted bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, err := s.userID(id)
	if err != nil {
		return fmt.Errorf("%s: %w", deletionVerb(deleted), err)
	}
	s.data.user(uid).deleted = deleted
	s.log.Debug("apisim user deletion changed", "user_id", id, "deleted", deleted)
	return nil
}

// Delete deletes the resource of catalog type typ and id. A deleted team
// disappears from /teams and from every user's teams, directAssignedTeams
// and roleAssignedTeams; users holding a deleted role or profile, and roles
// having a deleted role as parentRole, then show null; users as DeleteUser.
func (s *Server) Delete(typ string, id int64) error { return s.setDeleted(typ, id, true) }

// Restore undoes Delete, team memberships included.
func (s *Server) Restore(typ string, id int64) error { return s.setDeleted(typ, id, false) }

func (s *Server) setDeleted(typ string, id int64, deleted bool) error {
	kind, err := s.kindOf(typ, true)
	if err != nil {
		return fmt.Errorf("%s: %w", deletionVerb(deleted), err)
	}
	if kind == kindUser {
		return s.setUserDeleted(id, deleted)
	}
	return s.setSmallDeleted(kind, id, deleted)
}

// Update updates a team, role or profile: updatedAt moves, and a team's
// color may change.
func (s *Server) Update(typ string, id int64) error {
	kind, err := s.kindOf(typ, false)
	if err != nil {
		return err
	}
	return s.updateSmall(kind, id)
}

// kindOf returns the kind of catalog type typ: a dimension, or a user
// when users is set.
func (s *Server) kindOf(typ string, users bool) (resKind, error) {
	kind := kindOfType(typ)
	if kind == kindNone || (kind == kindUser && !users) {
		return kindNone, fmt.Errorf("type %q: %w", typ, ErrNotFound)
	}
	return kind, nil
}

func (s *Server) smallByID(kind resKind, id int64) (*smallRec, error) {
	if id <= 0 || id > 1<<32-1 {
		return nil, fmt.Errorf("%s %d: %w", s.types[kind].name, id, ErrNotFound)
	}
	rec := s.data.smallRec(kind, uint32(id))
	if rec == nil {
		return nil, fmt.Errorf("%s %d: %w", s.types[kind].name, id, ErrNotFound)
	}
	return rec, nil
}

func (s *Server) setSmallDeleted(kind resKind, id int64, deleted bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.smallByID(kind, id)
	if err != nil {
		return fmt.Errorf("%s: %w", deletionVerb(deleted), err)
	}
	rec.deleted = deleted
	s.log.Debug("apisim deletion changed", "type", s.types[kind].name, "id", id, "deleted", deleted)
	return nil
}

func (s *Server) updateSmall(kind resKind, id int64) error {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.smallByID(kind, id)
	if err != nil {
		return fmt.Errorf("updating: %w", err)
	}
	rec.version++
	rec.updatedAt = max(now, rec.updatedAt+1)
	s.encodeSmall(kind, rec)
	return nil
}

func deletionVerb(deleted bool) string {
	if deleted {
		return "deleting"
	}
	return "restoring"
}

// churn runs one round of the Churn knob.
func (s *Server) churn(c Churn) {
	now := s.nowMs()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.churnRounds++
	updated := s.updateUsersLocked(c.Update, now)
	created := s.createUsersLocked(c.Create, now)
	var deleted string
	if c.DeleteEvery > 0 && s.churnRounds%c.DeleteEvery == 0 {
		deleted = s.deleteOneLocked(s.nthDimension(s.churnRounds/c.DeleteEvery - 1))
	}
	moved, edited, restored := s.churnHistoryLocked(c, now)
	s.stats.churned()
	s.log.Debug("apisim churn", "round", s.churnRounds, "updated", len(updated), "created", len(created), "deleted", deleted,
		"moved", moved, "edited", edited, "restored", restored)
}

// deleteOneLocked deletes a random live team, role or profile, keeping at
// least one of each; it returns "team 7" or "".
func (s *Server) deleteOneLocked(kind resKind) string {
	recs := s.data.small(kind)
	var live []int
	for i := range recs {
		if !recs[i].deleted {
			live = append(live, i)
		}
	}
	if len(live) < 2 {
		return ""
	}
	rec := &recs[live[s.mutRNG.intn(len(live))]]
	rec.deleted = true
	return fmt.Sprintf("%s %d", s.types[kind].name, rec.id)
}

package users

import (
	"context"
	"testing"
)

func teamIndexExists(t *testing.T, s *Store) bool {
	t.Helper()
	var exists bool
	if err := s.pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, s.q+"."+teamIndex).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}

// TestDeferTeamIndex: the index is dropped only while user_teams is empty
// and its lock comes within the timeout, and EnsureTeamIndex builds it back
// once.
func TestDeferTeamIndex(t *testing.T) {
	t.Parallel()
	s, pool, _ := copyStore(t)
	s.ddlLockTimeout = "200ms"
	ctx := context.Background()

	// An analyst's open transaction that read user_teams: the load keeps
	// the index rather than wait.
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM `+s.q+`.user_teams`); err != nil {
		t.Fatal(err)
	}
	if dropped, err := s.deferTeamIndex(ctx); err != nil || dropped || !teamIndexExists(t, s) {
		t.Fatalf("with user_teams locked: dropped %v, err %v; want the index kept", dropped, err)
	}
	_ = reader.Rollback(ctx)

	if dropped, err := s.deferTeamIndex(ctx); err != nil || !dropped || teamIndexExists(t, s) {
		t.Fatalf("empty user_teams: dropped %v, err %v; want the index dropped", dropped, err)
	}
	if dropped, err := s.deferTeamIndex(ctx); err != nil || dropped {
		t.Fatalf("dropping again: dropped %v, err %v; want nothing dropped", dropped, err)
	}
	if built, err := s.ensureTeamIndex(ctx); err != nil || !built || !teamIndexExists(t, s) {
		t.Fatalf("EnsureTeamIndex: built %v, err %v; want the index built", built, err)
	}
	if built, err := s.ensureTeamIndex(ctx); err != nil || built {
		t.Fatalf("EnsureTeamIndex again: built %v, err %v; want nothing built", built, err)
	}

	if _, err := pool.Exec(ctx, `INSERT INTO `+s.q+`.user_teams (user_id, team_id) VALUES (1, 2)`); err != nil {
		t.Fatal(err)
	}
	if dropped, err := s.deferTeamIndex(ctx); err != nil || dropped || !teamIndexExists(t, s) {
		t.Fatalf("user_teams with rows: dropped %v, err %v; want the index kept", dropped, err)
	}
}

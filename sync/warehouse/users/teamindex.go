package users

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The team_id index of user_teams serves "the users of team X" and the
// per-team membership diff (ReplaceTeamMembers). In a backfill it costs
// more than the table's own rows: every (user, team) pair goes into it at
// a random place. An initial load, which starts with user_teams empty,
// drops it (StartLoad) and builds it once the walk ends (EndLoad): one
// sorted build instead of a random insert per pair.
// A load that dies before it ends leaves the index missing; every sync and
// reconcile builds it before it reads or writes user_teams.

// StartLoad readies user_teams' team_id index for a users walk: on a
// warehouse with no user it drops it (deferTeamIndex), for EndLoad to build
// once the walk ends; otherwise it builds it if a walk that died left it
// missing. It reports whether it dropped it, which EndLoad takes.
func (s *Store) StartLoad(ctx context.Context, log *slog.Logger) (deferred bool, err error) {
	empty, missing, err := s.loadState(ctx)
	if err != nil {
		return false, err
	}
	if empty {
		if deferred, err = s.deferTeamIndex(ctx); err != nil || deferred {
			return deferred, err
		}
	} else if !missing {
		return false, nil // the common case, read with the emptiness: one statement
	}
	return false, s.EnsureTeamIndex(ctx, log)
}

// EndLoad builds the team_id index that StartLoad dropped (deferred: what
// StartLoad returned), whether the walk failed or not and even when ctx is
// cancelled: the warehouse is queried meanwhile, and a failed walk may not
// be resumed soon.
func (s *Store) EndLoad(ctx context.Context, log *slog.Logger, deferred bool) error {
	if !deferred {
		return nil
	}
	return s.EnsureTeamIndex(context.WithoutCancel(ctx), log)
}

// teamIndex is the index's name, as migration 0001 created it (sql/users.sql
// names it too).
const teamIndex = "user_teams_team_id"

// teamIndexLockTimeout bounds the wait for user_teams' exclusive lock
// when dropping the index: past it (an analyst's query holds the table),
// the load keeps the index.
const teamIndexLockTimeout = "5s"

// deferTeamIndex drops user_teams' team_id index when user_teams is empty,
// for the load about to fill it to build it at the end with
// EnsureTeamIndex. It reports whether it dropped it. It keeps the index,
// without an error, when user_teams holds rows, when the table's lock is
// not granted within a few seconds, or when the role may not drop the
// index (a warehouse migrated by another role).
func (s *Store) deferTeamIndex(ctx context.Context) (bool, error) {
	dropped := false
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL lock_timeout = '" + s.ddlLockTimeout + "'"}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql.lockTeams); err != nil {
			return err
		}
		var drop bool
		err := tx.QueryRow(ctx, s.sql.teamIndexDroppable).Scan(&drop)
		if err != nil || !drop {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql.dropTeamIndex); err != nil {
			return err
		}
		dropped = true
		return nil
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "55P03" || pe.Code == "42501") { // lock_not_available, insufficient_privilege
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dropping the team_id index of user_teams for the initial load: %w", err)
	}
	return dropped, nil
}

// EnsureTeamIndex builds user_teams' team_id index if it is missing (a load
// that deferred it died), and logs that it did.
func (s *Store) EnsureTeamIndex(ctx context.Context, log *slog.Logger) error {
	start := time.Now()
	built, err := s.ensureTeamIndex(ctx)
	if built {
		log.InfoContext(ctx, "built the team_id index of user_teams", "duration_ms", time.Since(start).Milliseconds())
	}
	return err
}

func (s *Store) ensureTeamIndex(ctx context.Context) (bool, error) {
	var missing bool
	if err := s.pool.QueryRow(ctx, s.sql.teamIndexMissing).Scan(&missing); err != nil {
		return false, fmt.Errorf("looking for the team_id index of user_teams: %w", err)
	}
	if !missing {
		return false, nil
	}
	if _, err := s.pool.Exec(ctx, s.sql.createTeamIndex); err != nil {
		return false, fmt.Errorf("building the team_id index of user_teams: %w", err)
	}
	return true, nil
}

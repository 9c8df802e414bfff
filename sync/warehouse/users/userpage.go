package users

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/pgcopy"
	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// PreparedPage is one users page being written in its own transaction: begun
// and written by prepareUsers (the rows, versions and teams of new users,
// the bulk of the work), then completed by Commit (the linkage diff,
// quarantine and checkpoint) or abandoned by Rollback. Two pages with no
// user in common touch no common row until their checkpoints, so a page may
// be prepared on one connection while the page before it is being committed
// on another, as long as it commits after it (PreparePage's caller keeps
// that order).
type PreparedPage struct {
	s    *Store
	tx   pgx.Tx
	rows []normalize.Row
	bad  []warehouse.Quarantined
	w    pgrow.Writer
	c    warehouse.Counts
	b    *pgx.Batch // the linkage diff, sent with the checkpoint
	// wrote says the page wrote users: new, changed or converted in place
	// (convertPolicyOnly).
	wrote bool
}

// prepareUsers begins a page's transaction and writes its heavy part. The
// page must then be committed or rolled back.
func (s *Store) prepareUsers(ctx context.Context, rows []normalize.Row, bad []warehouse.Quarantined, w pgrow.Writer) (*PreparedPage, error) {
	rows = dedupe(rows)
	p := &PreparedPage{s: s, rows: rows, bad: bad, w: w, b: &pgx.Batch{}}
	// Pages written at once must never wait for each other's locks (the
	// writer would wait for a page that waits for it, and PostgreSQL could
	// not see the cycle): a wait over lockTimeout fails the page, and the
	// run resumes later, rather than hang.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: s.sql.beginPage})
	if err != nil {
		return nil, fmt.Errorf("loading %d users: beginning: %w", len(rows), err)
	}
	p.tx = tx
	if err := p.write(ctx); err != nil {
		p.rollback(ctx)
		return nil, fmt.Errorf("loading %d users: %w", len(rows), err)
	}
	return p, nil
}

// write compares the page with the warehouse (one indexed read, two when
// rows left linkage unsent) and writes what differs (see apply).
func (p *PreparedPage) write(ctx context.Context) error {
	if len(p.rows) == 0 {
		return nil
	}
	s, t := p.s, p.s.table
	stored, err := s.readStored(ctx, p.tx, t, p.rows)
	if err != nil {
		return err
	}
	c := classify(p.rows, stored, s.links)
	if n, err := p.convertPolicyOnly(ctx, c, stored); err != nil {
		return err
	} else if n > 0 {
		p.wrote = true
		c = classify(p.rows, stored, s.links)
	}
	return p.apply(ctx, c, stored)
}

// apply writes a classified page: users new to the warehouse are copied
// straight into users (their row is their first version) with their teams;
// users whose content or linkage changed go through the staging table,
// their superseded version into user_version_history, and the guarded
// upsert; unchanged users cost nothing more.
func (p *PreparedPage) apply(ctx context.Context, c pageClass, stored map[int64]pgrow.Stored) error {
	s, t := p.s, p.s.table
	p.c = warehouse.Counts{Inserted: int64(len(c.fresh)), Updated: c.updated, Unchanged: c.unchanged}
	p.wrote = p.wrote || len(c.fresh) > 0 || len(c.changed) > 0
	if len(c.fresh) > 0 {
		// A new user's row is its first version: nothing else to write.
		if _, err := pgrow.Copy(ctx, p.tx, t.CopyTable, &t, c.fresh, p.w); err != nil {
			return fmt.Errorf("copying new users: %w", err)
		}
		p.c.Versions += int64(len(c.fresh))
		if err := s.copyNewTeams(ctx, p.tx, c.fresh); err != nil {
			return err
		}
	}
	if len(c.changed) > 0 {
		if _, err := p.tx.Exec(ctx, t.CreateStage); err != nil {
			return fmt.Errorf("creating staging table: %w", err)
		}
		if _, err := pgrow.Copy(ctx, p.tx, t.CopyStage, &t, c.changed, p.w); err != nil {
			return fmt.Errorf("copying into staging: %w", err)
		}
		if c.contentChanged {
			tag, err := p.tx.Exec(ctx, s.sql.archiveVersions)
			if err != nil {
				return fmt.Errorf("closing replaced versions: %w", err)
			}
			p.c.Versions += tag.RowsAffected()
		}
		if back := comingBack(c, stored); len(back) > 0 {
			if _, err := p.tx.Exec(ctx, s.sql.reopenTeams, back); err != nil {
				return fmt.Errorf("reopening memberships of users that came back: %w", err)
			}
		}
		if _, err := p.tx.Exec(ctx, t.Upsert); err != nil {
			return fmt.Errorf("upserting changed users: %w", err)
		}
		s.queueTeamDiff(p.b, c.changed, c.relinked)
	}
	return nil
}

// commit writes the page's linkage diff, quarantine and checkpoint (cp
// advanced by the page; nil: none) and commits. It returns the page's counts
// and the checkpoint after it. On error the transaction is rolled back.
func (p *PreparedPage) commit(ctx context.Context, cp *warehouse.Checkpoint) (warehouse.Counts, warehouse.Checkpoint, error) {
	resolve := cp == nil || !cp.NoUnresolved
	p.s.queueQuarantine(p.b, "user", resolve, p.rows, p.bad, p.w)
	c := p.c
	c.Quarantined = int64(len(p.bad))
	var next warehouse.Checkpoint // cp as it is once this page commits
	if cp != nil {
		next = Advance(*cp, p.rows, c)
		p.s.queueCheckpoint(p.b, &next)
	}
	err := p.tx.SendBatch(ctx, p.b).Close()
	if err == nil {
		err = p.tx.Commit(ctx)
	}
	if err != nil {
		p.rollback(ctx)
		return warehouse.Counts{}, warehouse.Checkpoint{}, fmt.Errorf("loading %d users: %w", len(p.rows), err)
	}
	return c, next, nil
}

// comingBack returns the users marked deleted that the page brings back
// without diffing their teams: their memberships as they were when marked
// deleted open again (a page that sends their teams writes those instead).
func comingBack(c pageClass, stored map[int64]pgrow.Stored) []int64 {
	var ids []int64
	for i := range c.changed {
		r := &c.changed[i].Normalized
		if stored[r.ID].Deleted && (!c.relinked[r.ID] || !r.TeamsSent) {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// rollback abandons the page. It is a no-op after commit.
func (p *PreparedPage) rollback(ctx context.Context) {
	// The error is of no use: a failed rollback closes the connection,
	// and the transaction dies with it.
	_ = p.tx.Rollback(context.WithoutCancel(ctx))
}

// readStored reads what the warehouse holds of the rows' ids: hashes and
// state of each, and the fill (see storedFill) of those that left something
// unsent.
func (s *Store) readStored(ctx context.Context, tx pgx.Tx, t pgrow.Table, rows []normalize.Row) (map[int64]pgrow.Stored, error) {
	ids := make([]int64, len(rows))
	var fill []int64
	for i := range rows {
		ids[i] = rows[i].ID
		if pgrow.NeedsFill(&rows[i], s.links, t.Hashed) {
			fill = append(fill, rows[i].ID)
		}
	}
	out := make(map[int64]pgrow.Stored, len(ids))
	err := pgrow.ScanEach(ctx, tx, t.Current, ids, func(r pgx.Rows) error {
		var id int64
		var u pgrow.Stored
		var other *string
		if err := r.Scan(&id, &u.Hash, &u.Linkage, &u.Deleted, &other, &u.UpdatedAt); err != nil {
			return err
		}
		if other != nil {
			u.Other = []byte(*other)
		}
		out[id] = u
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the page's users from the warehouse: %w", err)
	}
	fills, err := t.ReadFill(ctx, tx, fill)
	if err != nil {
		return nil, err
	}
	for id, f := range fills {
		if u, ok := out[id]; ok {
			u.Fill = f
			out[id] = u
		}
	}
	return out, nil
}

// copyNewTeams writes the teams of users new to the warehouse with COPY:
// they have no user_teams rows to diff against (user_teams only holds rows
// of users in users: see ReplaceTeamMembers and migration 0004). (Their
// other linkage is in their users row.)
func (s *Store) copyNewTeams(ctx context.Context, tx pgx.Tx, fresh []pgrow.Row) error {
	var teams [][2]int64
	for i := range fresh {
		if r := &fresh[i].Normalized; r.TeamsSent {
			for _, t := range r.Teams {
				teams = append(teams, [2]int64{r.ID, t})
			}
		}
	}
	if len(teams) == 0 {
		return nil
	}
	teams = dedupePairs(teams)
	pair := func(b []byte, i int) ([]byte, error) {
		return pgcopy.AppendBigint(pgcopy.AppendBigint(pgcopy.AppendFieldCount(b, 2), teams[i][0]), teams[i][1]), nil
	}
	if _, err := pgcopy.Binary(ctx, tx, s.sql.copyTeams, len(teams), pair); err != nil {
		return fmt.Errorf("copying teams of new users: %w", err)
	}
	return nil
}

// dedupePairs drops repeated (user, team) pairs, keeping the first of each
// (an API listing the same team twice must not break the primary key).
func dedupePairs(pairs [][2]int64) [][2]int64 {
	seen := make(map[[2]int64]bool, len(pairs))
	out := pairs[:0]
	for _, p := range pairs {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// queueTeamDiff diffs the teams of the relinked users against what the
// warehouse holds: rows that differ are deleted or inserted, the rest stay.
// (Their other linkage is in their users row, written by the upsert.)
func (s *Store) queueTeamDiff(b *pgx.Batch, changed []pgrow.Row, relinked map[int64]bool) {
	var teamUsers, tu, tt []int64
	for i := range changed {
		r := &changed[i].Normalized
		if !relinked[r.ID] || !r.TeamsSent {
			continue
		}
		teamUsers = append(teamUsers, r.ID)
		for _, team := range r.Teams {
			tu, tt = append(tu, r.ID), append(tt, team)
		}
	}
	if len(teamUsers) > 0 {
		b.Queue(s.sql.deleteTeams, teamUsers, tu, tt)
		if len(tu) > 0 {
			b.Queue(s.sql.insertTeams, tu, tt)
		}
	}
}

// quiet says whether the page, under cp, has nothing to write: the last
// page of a walk whose users are all unchanged, none quarantined and no
// quarantine record to resolve.
func (p *PreparedPage) quiet(cp *warehouse.Checkpoint) bool {
	return cp.NextURL == "" && cp.NoUnresolved && len(p.bad) == 0 && !p.wrote && p.b.Len() == 0
}

// queueQuarantine resolves the records of the page's users (when resolve
// is set) and writes its quarantined resources.
func (s *Store) queueQuarantine(b *pgx.Batch, typ string, resolve bool, rows []normalize.Row, bad []warehouse.Quarantined, w pgrow.Writer) {
	if resolve && len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = fmt.Sprint(r.ID)
		}
		b.Queue(s.sql.resolveQuarantine, typ, ids)
	}
	for _, q := range bad {
		q = q.Storable()
		b.Queue(s.sql.insertQuarantine, pgrow.NullID(w.Run), q.Type, q.ID, q.Field, q.Error, q.Raw, pgrow.NullID(w.Policy))
	}
}

func (s *Store) queueCheckpoint(b *pgx.Batch, cp *warehouse.Checkpoint) {
	p := cp.Progress
	unknown := p.Unknown
	if unknown == nil {
		unknown = map[string]int{}
	}
	var next, maxAt any
	if cp.NextURL != "" {
		next = cp.NextURL
	}
	if !cp.MaxUpdatedAt.IsZero() {
		maxAt = cp.MaxUpdatedAt
	}
	b.Queue(s.sql.checkpoint, cp.RunID, next, maxAt, p.Pages, p.Fetched, p.Inserted, p.Updated, p.Unchanged,
		p.Quarantined, p.Requests, p.RateLimited, p.Retries, unknown, p.Versions)
}

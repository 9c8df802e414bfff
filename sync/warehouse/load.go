package warehouse

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
)

// Quarantined is a resource that could not be typed, kept whole.
type Quarantined struct {
	Type  string // JSON:API type
	ID    string // the id as sent
	Field string // what could not be typed
	Error string // why
	Raw   []byte // the whole resource as JSON
}

// Counts are what a load did.
type Counts struct {
	Inserted    int64
	Updated     int64
	Unchanged   int64
	Quarantined int64
	Versions    int64 // user_versions rows written
	Deleted     int64 // dimension ids marked deleted
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Unchanged += o.Unchanged
	c.Quarantined += o.Quarantined
	c.Versions += o.Versions
	c.Deleted += o.Deleted
}

// Checkpoint is a run's progress, written in the same transaction as the
// page it follows, so a crashed run resumes exactly after its last page.
type Checkpoint struct {
	RunID        int64
	NextURL      string    // "" when the run has read its last page
	MaxUpdatedAt time.Time // greatest updatedAt committed so far (zero: none), up to Horizon
	// Horizon, when set, is the latest updatedAt that may become
	// MaxUpdatedAt (and so the watermark): a later one is stored, but
	// would make incremental syncs ask only for changes after it.
	Horizon  time.Time
	Progress Progress // cumulative counters of the run
}

// Progress is a run's cumulative counters.
type Progress struct {
	Pages       int64          `json:"pages"`
	Fetched     int64          `json:"fetched"`
	Inserted    int64          `json:"inserted"`
	Updated     int64          `json:"updated"`
	Unchanged   int64          `json:"unchanged"`
	Quarantined int64          `json:"quarantined"`
	Versions    int64          `json:"versions"`
	Requests    int64          `json:"requests"`
	RateLimited int64          `json:"rate_limited"`
	Retries     int64          `json:"retries"`
	Unknown     map[string]int `json:"unknown_attributes"`
}

// LoadUsers writes one page of users in one transaction: the rows (upserted
// by id, unchanged rows untouched), a version for each user whose content
// changed, the team and other linkage of users whose linkage was sent, the
// quarantined resources, and the checkpoint. It issues a fixed number of
// statements whatever the page size. It is PrepareUsers and Commit.
func (s *Store) LoadUsers(ctx context.Context, rows []normalize.Row, bad []Quarantined, cp *Checkpoint) (Counts, error) {
	runID := int64(0)
	if cp != nil {
		runID = cp.RunID
	}
	p, err := s.PrepareUsers(ctx, rows, bad, runID, nil)
	if err != nil {
		return Counts{}, err
	}
	return p.Commit(ctx, cp)
}

// PendingUsers is a page of users written in a transaction not yet
// committed: see PrepareUsers.
type PendingUsers struct {
	s     *Store
	tx    pgx.Tx
	rows  []normalize.Row
	bad   []Quarantined
	runID int64
	isNew func(id int64) bool // see PrepareUsers
	c     Counts
	b     *pgx.Batch // the linkage diff, sent with the checkpoint
}

// PrepareUsers begins a page's transaction and does the page's heavy work
// (the rows, the versions, the teams of new users); Commit then writes the
// rest and the checkpoint, and commits. Two pages with no user in common
// touch no common row until their checkpoints, so the second page's
// PrepareUsers may run while the first is being written, on another
// connection, as long as the second commits after the first. A
// PendingUsers must be committed or rolled back.
//
// isNew, when not nil, reports ids certainly not in the warehouse (an
// initial load knows it of every id it has not written before): those rows
// are copied in without reading the warehouse for them first. Were isNew
// wrong, the copy would fail on the users primary key, never write a
// duplicate.
func (s *Store) PrepareUsers(ctx context.Context, rows []normalize.Row, bad []Quarantined, runID int64, isNew func(id int64) bool) (*PendingUsers, error) {
	rows = dedupe(rows)
	p := &PendingUsers{s: s, rows: rows, bad: bad, runID: runID, isNew: isNew, b: &pgx.Batch{}}
	// Pages written at once must never wait for each other's locks (the
	// writer would wait for a page that waits for it, and PostgreSQL could
	// not see the cycle): a wait over lockTimeout (a minute) fails the page, and
	// the run resumes later, rather than hang.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL lock_timeout = '" + s.lockTimeout + "'"})
	if err != nil {
		return nil, fmt.Errorf("loading %d users: beginning: %w", len(rows), err)
	}
	p.tx = tx
	if err := p.write(ctx); err != nil {
		p.Rollback(ctx)
		return nil, fmt.Errorf("loading %d users: %w", len(rows), err)
	}
	return p, nil
}

func (p *PendingUsers) write(ctx context.Context) error {
	if len(p.rows) == 0 {
		return nil
	}
	cls, err := p.s.writeUsers(ctx, p.tx, p.rows, p.runID, p.isNew)
	if err != nil {
		return err
	}
	p.c.Inserted, p.c.Updated, p.c.Versions = int64(len(cls.inserted)), cls.updated, cls.versions
	p.c.Unchanged = int64(len(p.rows)) - p.c.Inserted - p.c.Updated
	if err := p.s.copyNewLinkage(ctx, p.tx, p.rows, cls.inserted); err != nil {
		return err
	}
	p.s.queueLinkage(p.b, p.rows, cls.relinked)
	return nil
}

// Commit writes the page's linkage diff, quarantine and checkpoint (cp
// advanced by the page; nil: none) and commits. cp changes only if the
// commit succeeds. On error the transaction is rolled back.
func (p *PendingUsers) Commit(ctx context.Context, cp *Checkpoint) (Counts, error) {
	p.s.queueQuarantine(p.b, "user", p.rows, p.bad, p.runID)
	c := p.c
	c.Quarantined = int64(len(p.bad))
	var next Checkpoint // cp as it will be once this page commits
	if cp != nil {
		next = advance(*cp, p.rows, c)
		p.s.queueCheckpoint(p.b, &next)
	}
	err := p.tx.SendBatch(ctx, p.b).Close()
	if err == nil {
		err = p.tx.Commit(ctx)
	}
	if err != nil {
		p.Rollback(ctx)
		return Counts{}, fmt.Errorf("loading %d users: %w", len(p.rows), err)
	}
	if cp != nil {
		*cp = next
	}
	return c, nil
}

// Rollback abandons the page. It is a no-op after Commit.
func (p *PendingUsers) Rollback(ctx context.Context) {
	// The error is of no use: a failed rollback closes the connection,
	// and the transaction dies with it.
	_ = p.tx.Rollback(context.WithoutCancel(ctx))
}

// classified says what a page holds relative to the warehouse.
type classified struct {
	inserted map[int64]bool // new ids: copied straight in, linkage copied
	relinked map[int64]bool // existing ids whose linkage changed: diffed
	updated  int64          // existing ids whose content changed (or came back)
	versions int64          // user_versions rows written
}

// current is what the warehouse holds of a user, to classify a page.
type current struct {
	hash, linkage []byte
	deleted       bool
	other         []byte // other_relationships, when not null
}

// writeUsers compares the page with the warehouse (one indexed read, of the
// ids isNew does not vouch for: see PrepareUsers) and
// writes only what differs: users new to the warehouse are copied straight
// into users (their row is their first version); users whose content or
// linkage changed go through the staging table, their superseded version
// into user_version_history, and the guarded upsert; unchanged users cost
// nothing more.
func (s *Store) writeUsers(ctx context.Context, tx pgx.Tx, rows []normalize.Row, runID int64, isNew func(int64) bool) (classified, error) {
	cls := classified{inserted: map[int64]bool{}, relinked: map[int64]bool{}}
	t := s.tables["user"]
	ids := make([]int64, 0, len(rows))
	for i := range rows {
		if isNew == nil || !isNew(rows[i].ID) {
			ids = append(ids, rows[i].ID)
		}
	}
	stored := map[int64]current{}
	if len(ids) > 0 {
		var err error
		if stored, err = s.currentUsers(ctx, tx, ids); err != nil {
			return cls, err
		}
	}
	arrays, err := s.fillUnsent(ctx, tx, t, rows)
	if err != nil {
		return cls, err
	}
	fresh, changed := rowSource{t: &t, runID: runID}, rowSource{t: &t, runID: runID}
	contentChanged := false
	for i := range rows {
		cur, ok := stored[rows[i].ID]
		if ok && (arrays[rows[i].ID] != nil || cur.other != nil) {
			s.links.keepUnsent(&rows[i], arrays[rows[i].ID], cur.other)
		}
		h, lh := rows[i].Hash(), rows[i].LinkageHash()
		switch {
		case !ok:
			cls.inserted[rows[i].ID] = true
			fresh.add(&rows[i], h, lh, s.links.values(&rows[i]))
		default:
			content := !bytes.Equal(cur.hash, h) || cur.deleted
			linkage := !bytes.Equal(cur.linkage, lh)
			if content {
				cls.updated++
				contentChanged = contentChanged || !bytes.Equal(cur.hash, h)
			}
			if linkage {
				cls.relinked[rows[i].ID] = true
			}
			if content || linkage {
				changed.add(&rows[i], h, lh, s.links.values(&rows[i]))
			}
		}
	}
	if len(fresh.rows) > 0 {
		// A new user's row is its first version: nothing else to write.
		if _, err := fresh.copy(ctx, tx, t.copyTable); err != nil {
			return cls, fmt.Errorf("copying new users: %w", err)
		}
		cls.versions += int64(len(fresh.rows))
	}
	if len(changed.rows) > 0 {
		if _, err := tx.Exec(ctx, t.createStage); err != nil {
			return cls, fmt.Errorf("creating staging table: %w", err)
		}
		if _, err := changed.copy(ctx, tx, t.copyStage); err != nil {
			return cls, fmt.Errorf("copying into staging: %w", err)
		}
		if contentChanged {
			tag, err := tx.Exec(ctx, s.users.archiveVersions)
			if err != nil {
				return cls, fmt.Errorf("closing replaced versions: %w", err)
			}
			cls.versions += tag.RowsAffected()
		}
		if _, err := tx.Exec(ctx, t.upsert); err != nil {
			return cls, fmt.Errorf("upserting changed users: %w", err)
		}
	}
	return cls, nil
}

func (s *Store) currentUsers(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]current, error) {
	dbRows, err := tx.Query(ctx, s.tables["user"].current, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the page's users from the warehouse: %w", err)
	}
	out := make(map[int64]current, len(ids))
	for dbRows.Next() {
		var id int64
		var c current
		var other *string
		if err := dbRows.Scan(&id, &c.hash, &c.linkage, &c.deleted, &other); err != nil {
			dbRows.Close()
			return nil, fmt.Errorf("reading the page's users from the warehouse: %w", err)
		}
		if other != nil {
			c.other = []byte(*other)
		}
		out[id] = c
	}
	if err := dbRows.Err(); err != nil {
		return nil, fmt.Errorf("reading the page's users from the warehouse: %w", err)
	}
	return out, nil
}

// copyNewLinkage writes the teams of users new to the warehouse with COPY:
// they have no user_teams rows to diff against (user_teams only holds rows of
// users in users: see ReplaceTeamMembers and migration 0004). (Their other
// linkage is in their users row.)
func (s *Store) copyNewLinkage(ctx context.Context, tx pgx.Tx, rows []normalize.Row, inserted map[int64]bool) error {
	if len(inserted) == 0 {
		return nil
	}
	var teams [][2]int64
	for _, r := range rows {
		if !inserted[r.ID] || !r.TeamsSent {
			continue
		}
		for _, t := range r.Teams {
			teams = append(teams, [2]int64{r.ID, t})
		}
	}
	if len(teams) > 0 {
		teams = dedupePairs(teams)
		sql := copySQL(s.q+".user_teams", []string{"user_id", "team_id"})
		pair := func(b []byte, i int) ([]byte, error) {
			return appendBigint(appendBigint(appendFieldCount(b, 2), teams[i][0]), teams[i][1]), nil
		}
		if _, err := copyBinary(ctx, tx, sql, len(teams), pair); err != nil {
			return fmt.Errorf("copying teams of new users: %w", err)
		}
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

// advance returns the checkpoint after a page: counters added, the greatest
// updatedAt seen, unknown attributes counted.
func advance(cp Checkpoint, rows []normalize.Row, c Counts) Checkpoint {
	p := &cp.Progress
	p.Pages++
	p.Fetched += int64(len(rows)) + c.Quarantined
	p.Inserted += c.Inserted
	p.Updated += c.Updated
	p.Unchanged += c.Unchanged
	p.Quarantined += c.Quarantined
	p.Versions += c.Versions
	unknown := make(map[string]int, len(p.Unknown))
	for k, v := range p.Unknown {
		unknown[k] = v
	}
	for _, r := range rows {
		for _, u := range r.Unknown {
			unknown[u]++
		}
		if r.UpdatedAt.After(cp.MaxUpdatedAt) && (cp.Horizon.IsZero() || !r.UpdatedAt.After(cp.Horizon)) {
			cp.MaxUpdatedAt = r.UpdatedAt
		}
	}
	p.Unknown = unknown
	return cp
}

// dedupe keeps one row per id, the one with the greatest updatedAt (the last
// one on ties), in first-seen order: a page may repeat an id.
func dedupe(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	for i := range rows {
		if _, ok := seen[rows[i].ID]; ok {
			return dedupeCopy(rows)
		}
		seen[rows[i].ID] = i
	}
	return rows // the common case: no repeats, no copy
}

// dedupeCopy keeps, of each id, its row with the greatest updatedAt, in a new
// slice (the caller's is left alone).
func dedupeCopy(rows []normalize.Row) []normalize.Row {
	seen := make(map[int64]int, len(rows))
	out := rows[:0:0]
	for _, r := range rows {
		if i, ok := seen[r.ID]; ok {
			if !r.UpdatedAt.Before(out[i].UpdatedAt) {
				out[i] = r
			}
			continue
		}
		seen[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

// fillUnsent gives rows whose to-one linkage or data connections were not
// sent the values the warehouse holds, so "not sent" keeps what is stored
// (and the content hash stays that of the stored version). For users it also
// returns the stored linkage arrays of rows that did not send every array
// relationship, for userLinks.keepUnsent. It costs a query only for pages
// that have such rows.
func (s *Store) fillUnsent(ctx context.Context, tx pgx.Tx, t tableSQL, rows []normalize.Row) (map[int64][][]int64, error) {
	if t.currentOne == "" {
		return nil, nil
	}
	var ids []int64
	for _, r := range rows {
		if t.hashed && (!r.DataConnectionsSent || !s.links.sentAll(&r)) {
			ids = append(ids, r.ID)
			continue
		}
		for _, o := range r.ToOne {
			if !o.Sent {
				ids = append(ids, r.ID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	dbRows, err := tx.Query(ctx, t.currentOne, ids)
	if err != nil {
		return nil, fmt.Errorf("reading stored relationships: %w", err)
	}
	type stored struct {
		toOne  []*int64
		dc     *string
		arrays [][]int64
	}
	current := map[int64]stored{}
	for dbRows.Next() {
		st := stored{toOne: make([]*int64, len(t.toOneCols)), arrays: make([][]int64, len(t.arrayCols))}
		var id int64
		dest := []any{&id}
		for i := range st.toOne {
			dest = append(dest, &st.toOne[i])
		}
		if t.hashed {
			dest = append(dest, &st.dc)
			for i := range st.arrays {
				dest = append(dest, &st.arrays[i])
			}
		}
		if err := dbRows.Scan(dest...); err != nil {
			dbRows.Close()
			return nil, fmt.Errorf("reading stored relationships: %w", err)
		}
		current[id] = st
	}
	if err := dbRows.Err(); err != nil {
		return nil, fmt.Errorf("reading stored relationships: %w", err)
	}
	arrays := map[int64][][]int64{}
	for i := range rows {
		st, ok := current[rows[i].ID]
		if !ok {
			continue
		}
		for j, o := range rows[i].ToOne {
			if !o.Sent && st.toOne[j] != nil {
				rows[i].ToOne[j] = normalize.ToOne{ID: *st.toOne[j], Valid: true}
				rows[i].Changed()
			}
		}
		if t.hashed && !rows[i].DataConnectionsSent && st.dc != nil {
			rows[i].DataConnections = []byte(*st.dc)
			rows[i].Changed()
		}
		if t.hashed {
			arrays[rows[i].ID] = st.arrays
		}
	}
	return arrays, nil
}

// rowSource is the rows of one COPY into a resource table, or a table
// shaped like it, with what users need besides the row: hashes, linkage and
// the run.
type rowSource struct {
	t      *tableSQL
	runID  int64 // users: version_run_id of new versions (0: NULL)
	rows   []*normalize.Row
	hashes [][2][]byte  // users: content and linkage hash of each row
	links  []linkValues // users: linkage columns of each row
}

func (r *rowSource) add(row *normalize.Row, hash, linkage []byte, links linkValues) {
	r.rows = append(r.rows, row)
	r.hashes = append(r.hashes, [2][]byte{hash, linkage})
	r.links = append(r.links, links)
}

// copy copies the rows with sql, a binary COPY of the table's columns.
func (r *rowSource) copy(ctx context.Context, tx pgx.Tx, sql string) (int64, error) {
	return copyBinary(ctx, tx, sql, len(r.rows), func(b []byte, i int) ([]byte, error) {
		return r.appendFields(appendFieldCount(b, len(r.t.columns)), i)
	})
}

// appendFields appends the fields of row i, one per column of the table.
func (r *rowSource) appendFields(b []byte, i int) ([]byte, error) {
	t, row := r.t, r.rows[i]
	if len(row.Values) != len(t.res.Attributes) || len(row.ToOne) != len(t.toOneCols) {
		return b, fmt.Errorf("encoding %s %d: %d attributes and %d to-one ids for %d and %d columns",
			t.res.Type, row.ID, len(row.Values), len(row.ToOne), len(t.res.Attributes), len(t.toOneCols))
	}
	b = appendBigint(b, row.ID)
	for j, v := range row.Values {
		var err error
		if b, err = appendValue(b, t.types[1+j], v); err != nil {
			return b, fmt.Errorf("encoding %s %d, column %s: %w", t.res.Type, row.ID, t.columns[1+j], err)
		}
	}
	for _, o := range row.ToOne {
		if o.Valid {
			b = appendBigint(b, o.ID)
		} else {
			b = appendNull(b)
		}
	}
	b = appendJSONB(b, row.Raw)
	if t.hashed {
		h, l := r.hashes[i], r.links[i]
		b = appendBytea(appendBytea(b, h[0]), h[1])
		b = appendJSONB(b, row.DataConnections)
		b = appendNullableBigint(b, r.runID)
		for _, a := range l.arrays {
			b = appendBigintArray(b, a)
		}
		b = appendJSONB(b, l.other)
	}
	return b, nil
}

func plainSource(t *tableSQL, rows []normalize.Row) *rowSource {
	src := &rowSource{t: t, rows: make([]*normalize.Row, len(rows))}
	for i := range rows {
		src.rows[i] = &rows[i]
	}
	return src
}

func (s *Store) hashedSource(t *tableSQL, rows []normalize.Row) *rowSource {
	src := &rowSource{t: t}
	for i := range rows {
		src.add(&rows[i], rows[i].Hash(), rows[i].LinkageHash(), s.links.values(&rows[i]))
	}
	return src
}

// queueLinkage diffs the teams of the users in only against what the
// warehouse holds: rows that differ are deleted or inserted, the rest stay.
// (Their other linkage is in their users row, written by the upsert.)
func (s *Store) queueLinkage(b *pgx.Batch, rows []normalize.Row, only map[int64]bool) {
	if len(only) == 0 {
		return
	}
	var teamUsers, tu, tt []int64
	for _, r := range rows {
		if !only[r.ID] || !r.TeamsSent {
			continue
		}
		teamUsers = append(teamUsers, r.ID)
		for _, team := range r.Teams {
			tu, tt = append(tu, r.ID), append(tt, team)
		}
	}
	if len(teamUsers) > 0 {
		b.Queue(s.users.deleteTeams, teamUsers, tu, tt)
		if len(tu) > 0 {
			b.Queue(s.users.insertTeams, tu, tt)
		}
	}
}

func (s *Store) queueQuarantine(b *pgx.Batch, typ string, rows []normalize.Row, bad []Quarantined, runID int64) {
	if len(rows) > 0 {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = fmt.Sprint(r.ID)
		}
		b.Queue(s.users.resolveQuarant, typ, ids)
	}
	for _, q := range bad {
		q = storable(q)
		b.Queue(`INSERT INTO `+s.q+`.quarantine (run_id, resource_type, resource_id, field, error, raw)
			VALUES ($1, $2, $3, $4, $5, $6)`, nullID(runID), q.Type, q.ID, q.Field, q.Error, q.Raw)
	}
}

func (s *Store) queueCheckpoint(b *pgx.Batch, cp *Checkpoint) {
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
	b.Queue(s.users.checkpoint, cp.RunID, next, maxAt, p.Pages, p.Fetched, p.Inserted, p.Updated, p.Unchanged,
		p.Quarantined, p.Requests, p.RateLimited, p.Retries, unknown)
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// UsersEmpty reports whether the warehouse holds no user at all.
func (s *Store) UsersEmpty(ctx context.Context) (bool, error) {
	var empty bool
	if err := s.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM `+s.q+`.users)`).Scan(&empty); err != nil {
		return false, fmt.Errorf("checking whether users is empty: %w", err)
	}
	return empty, nil
}

// CopyUsersRaw copies rows straight into table (a table shaped like users,
// e.g. CREATE TABLE x (LIKE users)), committing every batch rows: no
// staging, no upsert, no history. It is the yardstick the benchmarks hold
// the sync's load path against.
func (s *Store) CopyUsersRaw(ctx context.Context, table string, rows []normalize.Row, batch int) error {
	t := s.tables["user"]
	sql := copySQL(s.q+"."+schema.QuoteIdentifier(table), t.columns)
	for start := 0; start < len(rows); start += batch {
		end := min(start+batch, len(rows))
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			_, err := s.hashedSource(&t, rows[start:end]).copy(ctx, tx, sql)
			return err
		})
		if err != nil {
			return fmt.Errorf("copying rows %d-%d: %w", start, end, err)
		}
	}
	return nil
}

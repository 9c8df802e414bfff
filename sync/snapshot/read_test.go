package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// checkPartition checks that chunks are contiguous ranges whose first is
// open below and last open above, after a chunk of NULLs for key ranges.
func checkPartition(t *testing.T, chunks []chunk, want int) {
	t.Helper()
	if len(chunks) > 1 && chunks[0].kind == keyNull {
		chunks = chunks[1:]
		want--
	}
	if len(chunks) != want {
		t.Fatalf("%d chunks, want %d: %+v", len(chunks), want, chunks)
	}
	if want == 1 {
		if chunks[0].kind != wholeTable {
			t.Errorf("one chunk reads %+v", chunks[0])
		}
		return
	}
	kind := chunks[0].kind
	first, last := int64(0), int64(lastBlock) // a blockRange's to is excluded
	if kind == keyRange {
		first, last = math.MinInt64, math.MaxInt64 // a keyRange's to is included
	}
	for i, c := range chunks {
		if c.kind != kind || (kind != blockRange && kind != keyRange) {
			t.Fatalf("chunk %d of %d: %+v", i, len(chunks), c)
		}
		if i == 0 && c.from != first || i == len(chunks)-1 && c.to != last {
			t.Errorf("chunk %d of %d does not reach the end: %+v", i, len(chunks), c)
		}
		if i > 0 {
			prev := chunks[i-1].to
			if kind == keyRange {
				prev++
			}
			if c.from != prev {
				t.Errorf("chunk %d starts at %d, the previous ends before %d", i, c.from, prev)
			}
		}
		if c.to < c.from || kind == blockRange && c.to == c.from {
			t.Errorf("chunk %d is empty: %+v", i, c)
		}
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	checkPartition(t, ctidChunks(0, 5), 1)
	checkPartition(t, ctidChunks(1000, 1), 1)
	checkPartition(t, ctidChunks(3, 10), 3) // never less than a block
	checkPartition(t, ctidChunks(1000, 7), 7)
	checkPartition(t, ctidChunks(math.MaxUint32-1, 300), 300)
	if got := ctidChunks(10, 2); !slices.Equal(got, []chunk{{kind: blockRange, from: 0, to: 5}, {kind: blockRange, from: 5, to: lastBlock}}) {
		t.Errorf("ctidChunks(10, 2) = %+v", got)
	}

	checkPartition(t, keyChunks("id", 5, 5, 4), 1)
	checkPartition(t, keyChunks("id", 9, 5, 4), 1)
	checkPartition(t, keyChunks("id", 1, 3, 4), 1) // fewer ids than chunks
	checkPartition(t, keyChunks("id", 1, 1_000_000, 300), 301)
	checkPartition(t, keyChunks("id", -50, 50, 7), 8)
	checkPartition(t, keyChunks("id", math.MinInt64, math.MaxInt64, 300), 301)
	got := keyChunks("user_id", 1, 100, 3)
	want := []chunk{{kind: keyNull, key: "user_id"}, {kind: keyRange, key: "user_id", from: math.MinInt64, to: 33},
		{kind: keyRange, key: "user_id", from: 34, to: 66}, {kind: keyRange, key: "user_id", from: 67, to: math.MaxInt64}}
	if !slices.Equal(got, want) {
		t.Errorf("keyChunks = %+v, want %+v", got, want)
	}
}

func TestPlanChunks(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 300)
	ctx := context.Background()
	dest, _ := newLocal(t)
	w, err := New(pool, name, dest, nil, nil, Options{chunkBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, tc := range []struct {
		table string
		split string // the key the chunks split on, "ctid" for heap blocks; "" for one chunk
	}{
		{"users", "ctid"}, {"user_teams", "ctid"}, {"roles", ""},
		{"users_current", "id"}, {"user_versions", "user_id"}, {"user_relationships", "user_id"},
	} {
		chunks, err := w.planChunks(ctx, tx, tableByName(t, tc.table))
		if err != nil {
			t.Fatal(err)
		}
		if tc.split == "" {
			checkPartition(t, chunks, 1)
			continue
		}
		want := chunk{kind: keyRange, key: tc.split}
		if tc.split == "ctid" {
			want = chunk{kind: blockRange}
		}
		if len(chunks) < 3 || chunks[2].kind != want.kind || chunks[2].key != want.key {
			t.Errorf("%s: chunks %+v, want several on %s", tc.table, chunks, tc.split)
			continue
		}
		checkPartition(t, chunks, len(chunks))
	}
}

// TestParallelReadersShareTheSnapshot writes a snapshot over several
// readers and many chunks while another session updates, deletes, inserts
// and vacuums: once after the snapshot is exported and before the other
// readers import it, and again once every reader is reading and before most
// chunks are read. The files hold the rows as they were when the snapshot
// started, each once.
func TestParallelReadersShareTheSnapshot(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 400)
	ctx := context.Background()
	tables, err := snapshotTables(nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]string{}
	for _, tbl := range tables {
		before[tbl.Name] = pgRows(t, pool, name, tbl)
	}
	rows, err := pool.Query(ctx, `SELECT id FROM `+pgx.Identifier{name, "users"}.Sanitize()+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	userIDs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}

	q := func(table string) string { return pgx.Identifier{name, table}.Sanitize() }
	change := func(stmts ...string) {
		for _, s := range stmts {
			if _, err := pool.Exec(ctx, s); err != nil {
				t.Errorf("changing the warehouse: %v\n%s", err, s)
			}
		}
	}
	// Before the other readers import the snapshot: they see none of it.
	exported := []string{
		`UPDATE ` + q("users") + ` SET email = 'changed', first_name = repeat('x', 3000) WHERE id % 2 = 0`,
		`DELETE FROM ` + q("users") + ` WHERE id % 3 = 0`,
		`INSERT INTO ` + q("users") + ` (id, raw, content_hash, synced_at) SELECT 100000 + g, '{}', '\x00', now() FROM generate_series(1, 500) g`,
		`UPDATE ` + q("user_teams") + ` SET synced_at = now(), valid_from = now() WHERE user_id % 2 = 0`,
		`INSERT INTO ` + q("user_version_history") + ` (user_id, content_hash, raw, valid_from, valid_to) SELECT id, '\x01', '{}', now(), now() FROM ` + q("users") + ` WHERE id % 2 = 0`,
	}
	// Once every reader is reading users, before most chunks are read.
	reading := []string{
		`UPDATE ` + q("users") + ` SET mailbox_ids = ARRAY[1, 2, 3], last_name = 'changed'`,
		`UPDATE ` + q("user_teams") + ` SET synced_at = now()`,
		`UPDATE ` + q("teams") + ` SET name = 'renamed' WHERE id = 1`,
		`INSERT INTO ` + q("user_version_history") + ` (user_id, content_hash, raw, valid_from, valid_to) SELECT id, '\x01', '{}', now(), now() FROM ` + q("users"),
		`VACUUM ` + q("users"), // removes nothing the exported snapshot still sees
	}
	local, _ := newLocal(t)
	dest := &hookDestination{Destination: local}
	changed := false
	var started atomic.Int32 // readers that started a chunk of users
	dest.setWrap(func(ctx context.Context, file string, o Object) Object {
		if changed || !strings.HasPrefix(file, name+"/users/") {
			return o
		}
		changed = true
		// Every reader has started on its first chunk and is waiting to
		// hand over its first batch, or has handed it over.
		waitFor(t, func() bool { return started.Load() == 3 })
		change(reading...)
		return o
	})
	w, err := New(pool, name, dest, testLogger(t), nil, Options{Readers: 3, chunkBytes: 8 << 10, BatchRows: 8, FileRows: 150})
	if err != nil {
		t.Fatal(err)
	}
	w.snapshotExported = func() { change(exported...) }
	var seen [3]atomic.Bool
	w.chunkStarted = func(table string, reader, chunk int) {
		if table == "users" && !seen[reader].Swap(true) {
			started.Add(1)
		}
	}
	m, err := w.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Fatal("the warehouse was not changed during the snapshot")
	}
	for _, tbl := range tables {
		tm, _ := m.Table(tbl.Name)
		got, _ := snapshotRows(t, dest, tm)
		sameRows(t, tbl.Name, before[tbl.Name], got)
		if after := pgRows(t, pool, name, tbl); !slices.Contains([]string{"roles", "profiles", "role_versions", "profile_versions"}, tbl.Name) && slices.Equal(after, before[tbl.Name]) {
			t.Errorf("%s did not change", tbl.Name)
		}
	}
	// Every user once, in the order of the heap, which fill wrote by id.
	users, _ := m.Table("users")
	if ids := snapshotIDs(t, dest, users); !slices.Equal(ids, userIDs) {
		t.Errorf("the snapshot has user ids %v…, PostgreSQL had %v…", ids[:min(len(ids), 20)], userIDs[:20])
	}
}

// TestReadersDoNotChangeFiles writes the same snapshot with two readers and
// with four: the files are byte for byte the same, rows in the same order.
func TestReadersDoNotChangeFiles(t *testing.T) {
	t.Parallel()
	pool, name := newWarehouse(t)
	fill(t, pool, name, 300)
	ctx := context.Background()
	at := func() time.Time { return time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC) }
	var files [][][]byte
	for _, readers := range []int{2, 4} {
		dest, _ := newLocal(t)
		w, err := New(pool, name, dest, testLogger(t), at, Options{Readers: readers, chunkBytes: 16 << 10, BatchRows: 16, FileRows: 100})
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var all [][]byte
		for _, tm := range m.Tables {
			for _, f := range tm.Files {
				r, err := dest.Open(ctx, f.Path)
				if err != nil {
					t.Fatal(err)
				}
				data, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, data)
			}
		}
		files = append(files, all)
	}
	if !slices.EqualFunc(files[0], files[1], bytes.Equal) {
		t.Errorf("two readers and four wrote different files (%d and %d)", len(files[0]), len(files[1]))
	}
}

// snapshotIDs returns the first column (id) of a table's files, in file order.
func snapshotIDs(t *testing.T, dest Destination, tm TableManifest) []int64 {
	t.Helper()
	rows, _ := readSnapshotRows(t, dest, tm)
	ids := make([]int64, len(rows))
	for i, r := range rows {
		first, _, _ := strings.Cut(r, " | ")
		if _, err := fmt.Sscanf(first, "int:%d", &ids[i]); err != nil {
			t.Fatalf("id of %q: %v", r, err)
		}
	}
	return ids
}

// waitFor polls cond for up to 30 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not met within 30s")
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

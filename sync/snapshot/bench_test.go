package snapshot

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse"
)

// Benchmark knobs (environment): USERSYNC_BENCH_USERS (default 100,000)
// sizes the data set; USERSYNC_BENCH_<OPTION> overrides one option for
// tuning runs: BATCH_ROWS, BATCH_BYTES, ROW_GROUP_ROWS, PAGE_BYTES, WORKERS,
// READERS, CHUNK_BYTES, COMPRESSION, LEVEL, DICTIONARY (sampled, all, none).

func benchUsers(b *testing.B) int {
	if v := os.Getenv("USERSYNC_BENCH_USERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("USERSYNC_BENCH_USERS: %v", err)
		}
		return n
	}
	return 100_000
}

func benchOptions(b *testing.B) Options {
	var o Options
	num := func(name string, set func(int)) {
		if v := os.Getenv("USERSYNC_BENCH_" + name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("USERSYNC_BENCH_%s: %v", name, err)
			}
			set(n)
		}
	}
	num("BATCH_ROWS", func(n int) { o.BatchRows = n })
	num("BATCH_BYTES", func(n int) { o.BatchBytes = n })
	num("ROW_GROUP_ROWS", func(n int) { o.RowGroupRows = n })
	num("ROW_GROUP_BYTES", func(n int) { o.RowGroupBytes = n })
	num("PAGE_BYTES", func(n int) { o.PageBytes = n })
	num("WORKERS", func(n int) { o.Workers = n })
	num("LEVEL", func(n int) { o.CompressionLevel = n })
	num("WRITE_BATCH", func(n int) { o.writeBatch = n })
	num("READERS", func(n int) { o.Readers = n })
	num("CHUNK_BYTES", func(n int) { o.chunkBytes = n })
	o.Compression = Compression(os.Getenv("USERSYNC_BENCH_COMPRESSION"))
	o.pageV1 = os.Getenv("USERSYNC_BENCH_PAGE_V1") != ""
	switch d := os.Getenv("USERSYNC_BENCH_DICTIONARY"); d {
	case "", "sampled":
	case "all":
		o.dictionary = dictionaryAll
	case "none":
		o.dictionary = dictionaryNone
	default:
		b.Fatalf("USERSYNC_BENCH_DICTIONARY=%s: want sampled, all or none", d)
	}
	o.Keep = 1
	return o
}

// peakMemory samples the live heap and the memory the Go runtime holds
// from the OS (an approximation of its RSS) until stopped.
func peakMemory() (stop func() (heap, held uint64)) {
	var peakHeap, peakHeld atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(samples)
			peakHeap.Store(max(peakHeap.Load(), samples[0].Value.Uint64()))
			peakHeld.Store(max(peakHeld.Load(), samples[1].Value.Uint64()-samples[2].Value.Uint64()))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-finished
		return peakHeap.Load(), peakHeld.Load()
	}
}

// cpuTime is the CPU time (user and system) this process has used. Unlike
// rows/s, rows per CPU second does not depend on what else the machine runs.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// totalAlloc is the number of bytes allocated on the heap so far.
func totalAlloc() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkWrite snapshots a warehouse of USERSYNC_BENCH_USERS synthetic
// users (with one version each, 0–4 teams each, and the users_current view)
// and reports rows/s over every table written, the peak live heap and the
// peak memory held by the Go runtime. "users" (the widest table),
// "user_versions", "users_current" (the view, with its lists) and
// "user_teams" (the longest, narrow) write one table; "all" writes every
// snapshot table.
//
//	go test -run '^$' -bench BenchmarkWrite -benchtime 3x ./sync/snapshot/
//	USERSYNC_BENCH_USERS=1000000 go test -run '^$' -bench BenchmarkWrite -benchtime 1x -timeout 60m ./sync/snapshot/
func BenchmarkWrite(b *testing.B) {
	pool, name := benchWarehouse(b)
	for _, bc := range []struct {
		name   string
		tables []string
	}{
		{"users", []string{"users"}},
		{"user_versions", []string{"user_versions"}},
		{"users_current", []string{"users_current"}},
		{"user_teams", []string{"user_teams"}},
		{"all", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := benchOptions(b)
			opts.Tables = bc.tables
			dest, err := NewLocal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			w, err := New(pool, name, dest, nil, nil, opts)
			if err != nil {
				b.Fatal(err)
			}
			var rows, size int64
			var peakHeap, peakHeld, allocated uint64
			var elapsed, cpu, pgCPU time.Duration
			for b.Loop() {
				runtime.GC()
				pg0 := serverCPU(b, pool)
				stop := peakMemory()
				t0, cpu0, alloc0 := time.Now(), cpuTime(b), totalAlloc()
				m, err := w.Write(context.Background())
				elapsed += time.Since(t0)
				cpu += cpuTime(b) - cpu0
				pgCPU += serverCPU(b, pool).since(pg0)
				allocated += totalAlloc() - alloc0
				heap, held := stop()
				if err != nil {
					b.Fatal(err)
				}
				peakHeap, peakHeld = max(peakHeap, heap), max(peakHeld, held)
				rows += m.Rows()
				for _, t := range m.Tables {
					size += t.Bytes
				}
			}
			b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(peakHeld)/(1<<20), "peak-held-MiB")
			b.ReportMetric(float64(size)/float64(rows), "file-B/row")
			b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
			if pgCPU > 0 {
				b.ReportMetric(float64(rows)/(cpu+pgCPU).Seconds(), "rows/total-cpu-s")
			}
			b.ReportMetric(float64(allocated)/float64(rows), "alloc-B/row")
		})
	}
}

// benchWarehouse returns a warehouse loaded with benchUsers users: a fresh
// schema, or the schema USERSYNC_BENCH_SCHEMA, which is migrated and loaded
// once and kept between runs (drop it by hand).
func benchWarehouse(b *testing.B) (*pgxpool.Pool, string) {
	n := benchUsers(b)
	name := os.Getenv("USERSYNC_BENCH_SCHEMA")
	var pool *pgxpool.Pool
	if name == "" {
		pool, name = newWarehouse(b)
	} else {
		pool = schematest.NewPool(b, 6)
		if _, err := warehouse.Migrate(context.Background(), pool, warehouse.MigrateOptions{Schema: name}); err != nil {
			b.Fatal(err)
		}
		var have int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{name, "users"}.Sanitize()).Scan(&have); err != nil {
			b.Fatal(err)
		}
		markSynced(b, pool, name)
		if have == n {
			return pool, name
		}
		if have != 0 {
			b.Fatalf("schema %s holds %d users, not %d: drop it", name, have, n)
		}
	}
	start := time.Now()
	loadBenchData(b, pool, name, n)
	b.Logf("loaded %d users in %s", n, time.Since(start).Round(time.Millisecond))
	return pool, name
}

// loadBenchData fills the warehouse with n users whose values look like the
// API's: names and titles from small vocabularies, enums, unique emails and
// GUIDs, 10-80% NULLs, microsecond timestamps, a duties object, the raw JSON
// of all attributes (about 2 kB) and its SHA-256; one version per user (its
// users row: no superseded version), one mailbox per user, 0–4 of 50 teams
// per user, 20 roles, 5 profiles.
func loadBenchData(b *testing.B, pool *pgxpool.Pool, name string, n int) {
	b.Helper()
	ctx := context.Background()
	q := func(table string) string { return pgx.Identifier{name, table}.Sanitize() }
	users, _ := schema.TableNamed("users")
	var typed, exprs []string
	for k, c := range users.Columns {
		if c.Name == "raw" {
			break
		}
		typed = append(typed, pgx.Identifier{c.Name}.Sanitize())
		exprs = append(exprs, benchExpr(c, k)+" AS "+pgx.Identifier{c.Name}.Sanitize())
	}
	stmts := []string{
		`INSERT INTO ` + q("roles") + ` (id, name, created_at, updated_at, parent_role_id, raw, synced_at)
		 SELECT g, 'Role ' || g, now(), now(), NULLIF(g / 4, 0), jsonb_build_object('name', 'Role ' || g), now()
		 FROM generate_series(1, 20) g`,
		`INSERT INTO ` + q("profiles") + ` (id, name, is_admin, raw, synced_at)
		 SELECT g, 'Profile ' || g, g = 1, jsonb_build_object('name', 'Profile ' || g), now() FROM generate_series(1, 5) g`,
		`INSERT INTO ` + q("teams") + ` (id, name, color, created_at, raw, synced_at)
		 SELECT g, 'Team ' || g, (ARRAY['red','blue','green'])[1 + g % 3], now(), jsonb_build_object('name', 'Team ' || g), now()
		 FROM generate_series(1, 50) g`,
		`INSERT INTO ` + q("users") + ` (` + strings.Join(typed, ", ") + `, raw, content_hash, synced_at, deleted_at, version_run_id, mailbox_ids)
		 SELECT t.*, to_jsonb(t), sha256(convert_to(t::text, 'UTF8')), now(), CASE WHEN t.id % 50 = 0 THEN now() END, 1, ARRAY[t.id * 3]
		 FROM (SELECT ` + strings.Join(exprs, ",\n") + ` FROM generate_series(1::bigint, ` + strconv.Itoa(n) + `) g) t`,
		`INSERT INTO ` + q("user_teams") + ` (user_id, team_id)
		 SELECT u, (u + k * 13) % 50 + 1 FROM generate_series(1, ` + strconv.Itoa(n) + `) u, generate_series(1, u % 5) k`,
		`ANALYZE ` + q("users"),
		`ANALYZE ` + q("user_teams"),
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			b.Fatalf("loading: %v\n%s", err, s)
		}
	}
}

// benchExpr is the SQL expression of user column c (the k-th) for row g.
func benchExpr(c schema.Column, k int) string {
	nulls := func(pct int, expr string) string {
		return fmt.Sprintf("CASE WHEN (g * %d + %d) %% 100 < %d THEN NULL ELSE %s END", 7+k, k*13, pct, expr)
	}
	pick := func(words ...string) string {
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
		}
		return fmt.Sprintf("(ARRAY[%s])[1 + (g * %d + %d) %% %d]", strings.Join(quoted, ","), 3+k, k, len(words))
	}
	for _, a := range schema.User().Attributes {
		if a.Column() == c.Name && len(a.Enum) > 0 {
			return nulls(20, pick(a.Enum...))
		}
	}
	switch c.Name {
	case "id":
		return "g"
	case "email":
		return "'user' || g || '@example.com'"
	case "username":
		return "'user' || g"
	case "user_guid":
		return "md5(g::text)::uuid::text"
	case "first_name":
		return pick("Ana", "李", "Jürgen", "Zoë", "Олег", "Mary", "José", "Åsa", "Nguyễn", "Chloé", "Kenji", "O'Brien")
	case "last_name":
		return pick("Smith", "王", "Müller", "Dubois", "Иванов", "García", "Rossi", "Kowalski", "Nakamura", "Ødegaard") + " || (g % 97)"
	case "name":
		return "'User ' || g || ' ' || " + pick("Smith", "王", "Müller", "Dubois")
	case "title", "job_role_by_name":
		return nulls(30, pick("Account Executive", "SDR", "Sales Manager", "VP Sales", "Customer Success", "Engineer"))
	case "primary_timezone", "secondary_timezone", "tertiary_timezone":
		return nulls(20*(k%3), pick("Europe/Paris", "America/New_York", "Asia/Tokyo", "UTC", "America/Los_Angeles"))
	case "phone_number", "bridge_phone", "inbound_bridge_phone":
		return nulls(40, "'+1 555 ' || lpad((g * 7919 % 10000000)::text, 7, '0')")
	case "phone_country_code":
		return nulls(40, pick("US", "FR", "DE", "JP"))
	case "inbound_voicemail_custom_message_text":
		return nulls(80, "'Hello, you reached ' || g || '. ' || repeat('Please leave a message after the tone. ', 4)")
	case "scim_external_id":
		return nulls(60, "'scim-' || md5((g * 31)::text)")
	case "role_id":
		return nulls(5, "g % 20 + 1")
	case "profile_id":
		return nulls(30, "g % 5 + 1")
	case "creator_id", "updater_id":
		return nulls(10, "g % 1000 + 1")
	case "mailbox_id":
		return nulls(10, "g * 3")
	case "duties":
		return nulls(25, "jsonb_build_array(jsonb_build_object('id', g % 10, 'name', 'Duty ' || g % 10, 'type', 'duty'))")
	}
	switch c.Type {
	case "bigint":
		return nulls(15, fmt.Sprintf("(g %% %d) + 1000", 10+k))
	case "boolean":
		return nulls(10+k%5*10, fmt.Sprintf("(g * %d) %% 3 = 0", k))
	case "timestamptz":
		return nulls(k%3*15, fmt.Sprintf("timestamptz '2019-01-01 00:00:00Z' + g * interval '%d seconds' + (g * 7919 %% 1000000) * interval '1 microsecond'", 31+k))
	case "text":
		return nulls(20+k%4*15, pick("alpha", "bravo", "charlie", "delta", "écho", "foxtrot")+fmt.Sprintf(" || ' ' || (g %% %d)", 20+k*7))
	}
	panic("no bench expression for " + c.Type)
}

// BenchmarkRead is the ceiling of BenchmarkWrite/users: the users table read
// from PostgreSQL by the snapshot's readers and decoded into Arrow records,
// which are then dropped.
func BenchmarkRead(b *testing.B) {
	pool, name := benchWarehouse(b)
	w, err := New(pool, name, &Local{root: b.TempDir()}, nil, nil, benchOptions(b))
	if err != nil {
		b.Fatal(err)
	}
	users, _ := schema.TableNamed("users")
	ctx := context.Background()
	var rows int64
	var elapsed, cpu, pgCPU time.Duration
	for b.Loop() {
		pg0 := serverCPU(b, pool)
		t0, cpu0 := time.Now(), cpuTime(b)
		tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			b.Fatal(err)
		}
		rs, err := w.startReaders(ctx, tx)
		if err != nil {
			b.Fatal(err)
		}
		chunks, err := w.chunks(ctx, rs, users)
		if err != nil {
			b.Fatal(err)
		}
		run := &snapshotRun{id: "bench", schema: name, started: time.Now()}
		err = w.readTable(ctx, rs, users, run.arrowSchema(users), chunks, func(b batch) error {
			rows += b.rec.NumRows()
			b.release()
			return nil
		})
		rs.close(ctx)
		_ = tx.Rollback(ctx)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
		cpu += cpuTime(b) - cpu0
		pgCPU += serverCPU(b, pool).since(pg0)
	}
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
	if pgCPU > 0 {
		b.ReportMetric(float64(rows)/(cpu+pgCPU).Seconds(), "rows/total-cpu-s")
	}
}

// backendCPU is the CPU time each server process of a pool's connections
// has used, by process id.
type backendCPU map[uint32]time.Duration

// serverCPU reads the CPU time of the server processes behind the pool's
// idle connections (all of them, between two Writes) from /proc; it is
// empty when the server is not a local process.
func serverCPU(b *testing.B, pool *pgxpool.Pool) backendCPU {
	out := backendCPU{}
	for _, c := range pool.AcquireAllIdle(context.Background()) {
		pid := c.Conn().PgConn().PID()
		c.Release()
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Past the command's closing parenthesis: state is field 3, utime 14, stime 15.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) < 13 {
			continue
		}
		utime, err1 := strconv.ParseInt(fields[11], 10, 64)
		stime, err2 := strconv.ParseInt(fields[12], 10, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("parsing /proc/%d/stat: %q", pid, data)
		}
		out[pid] = time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
	}
	return out
}

// since is the CPU time the processes used after before was read; a process
// started since counts whole.
func (c backendCPU) since(before backendCPU) time.Duration {
	var d time.Duration
	for pid, t := range c {
		d += t - before[pid]
	}
	return d
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/snapshot"
)

// The yardstick of the snapshot: DuckDB (through its node package, pinned in
// bench/duckdb/package-lock.json) writing the rows of usersync's own `users`
// snapshot to Parquet with zstd.
const (
	duckdbDir     = "bench/duckdb"
	duckdbPackage = "@duckdb/node-api"
	duckdbRepeat  = 3 // COPYs per thread count; the fastest counts
)

// snapshotResult is one `usersync snapshot` of the warehouse after the
// backfill, and DuckDB writing the same users.
type snapshotResult struct {
	tables             int
	rows, usersRows    int64 // every table's rows; the users table's
	bytes, usersBytes  int64 // Parquet bytes, likewise
	wall               time.Duration
	usersTime          time.Duration // writing the users table, from the debug log; wall if absent
	usersTimeFromLog   bool
	rss                float64 // MiB
	duck               []duckResult
	duckSkipped        string // why DuckDB did not run, if it did not
	usersRate, allRate float64
	perTable           []tableTime
}

// tableTime is one table of a snapshot; time is 0 if the log did not say.
type tableTime struct {
	name        string
	rows, bytes int64
	time        time.Duration
}

// duckResult is the JSON line bench/duckdb/write.mjs prints, plus the
// process's peak RSS.
type duckResult struct {
	Rows      int64    `json:"rows"`
	Seconds   float64  `json:"seconds"` // the fastest COPY
	Bytes     int64    `json:"bytes"`
	Threads   int      `json:"threads"`
	RSSLoaded *float64 `json:"rss_loaded_mib"`
	RSSPeak   *float64 `json:"rss_peak_mib"` // during the COPY only
	Version   string   `json:"duckdb"`
	rss       float64  // the whole process's peak, MiB
}

func (d duckResult) rate() float64 { return float64(d.Rows) / d.Seconds }

// setupDuckDB makes sure bench/duckdb/node_modules holds the pinned DuckDB
// package, running `npm ci` when it is missing or another version, and
// returns the folder.
func setupDuckDB(ctx context.Context, root string, log io.Writer) (string, error) {
	dir := filepath.Join(root, duckdbDir)
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("finding %s: %w (make bench installs nodejs and npm; or pass -duckdb=false)", tool, err)
		}
	}
	want, err := lockedVersion(dir)
	if err != nil {
		return "", err
	}
	if have, _ := installedVersion(dir); have == want {
		return dir, nil
	}
	fmt.Fprintf(log, "bench: installing %s %s into %s (npm ci)\n", duckdbPackage, want, filepath.Join(duckdbDir, "node_modules"))
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = dir
	npm.Stdout, npm.Stderr = log, log
	if err := npm.Run(); err != nil {
		return "", fmt.Errorf("installing DuckDB with npm ci: %w", err)
	}
	have, err := installedVersion(dir)
	if err != nil {
		return "", fmt.Errorf("installing DuckDB: %w", err)
	}
	if have != want {
		return "", fmt.Errorf("installing DuckDB: npm ci left %s %s, want %s", duckdbPackage, have, want)
	}
	return dir, nil
}

// lockedVersion is the version of the DuckDB package package-lock.json pins.
func lockedVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("reading the DuckDB lock file: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return "", fmt.Errorf("decoding the DuckDB lock file: %w", err)
	}
	v := lock.Packages["node_modules/"+duckdbPackage].Version
	if v == "" {
		return "", fmt.Errorf("reading the DuckDB lock file: %s is not in it", duckdbPackage)
	}
	return v, nil
}

// installedVersion is the version of the DuckDB package in node_modules.
func installedVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "node_modules", duckdbPackage, "package.json"))
	if err != nil {
		return "", fmt.Errorf("reading the installed DuckDB package: %w", err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", fmt.Errorf("decoding the installed DuckDB package: %w", err)
	}
	return pkg.Version, nil
}

// snapshot runs `usersync snapshot` on the warehouse of env, then DuckDB on
// the users files it wrote.
func (b *bench) snapshot(ctx context.Context, env []string, name string) (*snapshotResult, error) {
	dir := filepath.Join(b.tmp, name+"-snapshots")
	defer func() { _ = os.RemoveAll(dir) }()
	// The debug log times each table; JSON to parse it.
	env = append(env[:len(env):len(env)], "USERSYNC_LOG_LEVEL=debug", "USERSYNC_LOG_FORMAT=json")
	run, err := b.commandOutput(ctx, env, "snapshot", "--out", dir, "--json")
	if err != nil {
		return nil, err
	}
	var m snapshot.Manifest
	if err := json.Unmarshal([]byte(run.stdout), &m); err != nil {
		return nil, fmt.Errorf("reading the snapshot manifest: %w", err)
	}
	users, ok := m.Table("users")
	if !ok {
		return nil, errors.New("reading the snapshot manifest: no users table")
	}
	s := &snapshotResult{tables: len(m.Tables), rows: m.Rows(), usersRows: users.Rows, usersBytes: users.Bytes,
		wall: run.wall, usersTime: run.wall, rss: run.rss}
	times := tableTimes(run.stderr)
	for _, t := range m.Tables {
		s.bytes += t.Bytes
		s.perTable = append(s.perTable, tableTime{name: t.Name, rows: t.Rows, bytes: t.Bytes, time: times[t.Name]})
	}
	if d := times["users"]; d > 0 {
		s.usersTime, s.usersTimeFromLog = d, true
	}
	s.usersRate, s.allRate = float64(s.usersRows)/s.usersTime.Seconds(), float64(s.rows)/run.wall.Seconds()

	if b.duckdb == "" {
		s.duckSkipped = "-duckdb=false"
		return s, nil
	}
	var files []string
	for _, f := range users.Files {
		files = append(files, filepath.Join(dir, filepath.FromSlash(f.Path)))
	}
	// The first is the one the ratio is taken against (the machine's 2 cores).
	for _, threads := range []int{2, 1} {
		fmt.Fprintf(b.log, "bench: %s: DuckDB writing the users (%d thread(s))\n", name, threads)
		d, err := b.duckWrite(ctx, files, threads, filepath.Join(b.tmp, fmt.Sprintf("%s-duckdb-%d.parquet", name, threads)))
		if err != nil {
			return nil, err
		}
		if d.Rows != s.usersRows {
			return nil, fmt.Errorf("comparing with DuckDB: it read %d users, the manifest says %d", d.Rows, s.usersRows)
		}
		s.duck = append(s.duck, d)
	}
	return s, nil
}

// tableTimes reads the time the snapshot took to write each table from its
// JSON debug log ("table written").
func tableTimes(log string) map[string]time.Duration {
	times := map[string]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg     string  `json:"msg"`
			Table   string  `json:"table"`
			Seconds float64 `json:"seconds"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "table written" && line.Table != "" {
			times[line.Table] = time.Duration(line.Seconds * float64(time.Second))
		}
	}
	return times
}

// duckWrite runs bench/duckdb/write.mjs: DuckDB loads files into memory, then
// the COPY to a zstd Parquet file out is timed.
func (b *bench) duckWrite(ctx context.Context, files []string, threads int, out string) (duckResult, error) {
	defer func() { _ = os.Remove(out) }()
	args := append([]string{"write.mjs", "-threads", fmt.Sprint(threads), "-repeat", fmt.Sprint(duckdbRepeat), "-out", out}, files...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = b.duckdb
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	rss, err := runWatched(cmd)
	d := duckResult{rss: rss}
	if err != nil {
		return d, fmt.Errorf("running DuckDB (write.mjs): %w: %s", err, lastLine(stderr.String()))
	}
	if err := json.Unmarshal([]byte(lastLine(stdout.String())), &d); err != nil {
		return d, fmt.Errorf("reading DuckDB's result: %w", err)
	}
	if d.Seconds <= 0 || d.Rows <= 0 {
		return d, fmt.Errorf("reading DuckDB's result: %q has no rows or time", lastLine(stdout.String()))
	}
	return d, nil
}

// printSnapshots prints the snapshot table: usersync's snapshot of the whole
// warehouse after the backfill, beside DuckDB writing its users.
func printSnapshots(w io.Writer, rs []result) {
	fmt.Fprintln(w, "Snapshot after the backfill: `usersync snapshot` (every table, zstd) beside DuckDB writing the same `users` rows to Parquet (zstd)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| users | tables, rows | time | users rows/s | all tables rows/s | users B/row | all MiB | peak RSS | DuckDB rows/s (2 threads) | DuckDB rows/s (1 thread) | DuckDB B/row | DuckDB RSS: loaded, COPY peak | users ÷ DuckDB: 2 threads, fastest | ≥ 25% | RSS < 300 MB |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|")
	for _, r := range rs {
		printSnapshotRow(w, r)
	}
	fmt.Fprintln(w)
	printSnapshotNotes(w, rs)
}

// printSnapshotRow prints one size's row of the snapshot table.
func printSnapshotRow(w io.Writer, r result) {
	s := r.snap
	if s == nil {
		fmt.Fprintf(w, "| %d | n/a (this usersync has no snapshot command) ||||||||||||||\n", r.users)
		return
	}
	usersRate := kilo(s.usersRate)
	if !s.usersTimeFromLog {
		usersRate += "*"
	}
	duck2, duck1, duckBytes, duckRSS, ratio, meets := "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"
	if len(s.duck) > 0 {
		d := s.duck[0]
		duck2 = kilo(d.rate())
		duckBytes = fmt.Sprintf("%.0f", float64(d.Bytes)/float64(d.Rows))
		duckRSS = fmt.Sprintf("%s, %s MiB", optionalMiB(d.RSSLoaded), optionalMiB(d.RSSPeak))
		best := d.rate()
		for _, o := range s.duck[1:] {
			best = max(best, o.rate())
		}
		ratio = fmt.Sprintf("%.0f%%, %.0f%%", 100*s.usersRate/d.rate(), 100*s.usersRate/best)
		meets = yesNo(s.usersRate >= 0.25*best)
	}
	if len(s.duck) > 1 {
		duck1 = kilo(s.duck[1].rate())
	}
	fmt.Fprintf(w, "| %d | %d, %d | %.1fs | %s | %s | %.0f | %.1f | %.0f MiB | %s | %s | %s | %s | %s | %s | %s |\n",
		r.users, s.tables, s.rows, s.wall.Seconds(), usersRate, kilo(s.allRate),
		float64(s.usersBytes)/float64(s.usersRows), float64(s.bytes)/(1<<20), s.rss,
		duck2, duck1, duckBytes, duckRSS, ratio, meets, yesNo(s.rss*(1<<20) < 300e6))
}

func optionalMiB(v *float64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprintf("%.0f", *v)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// printSnapshotNotes prints what the snapshot table's columns are, each
// size's tables, and the DuckDB version.
func printSnapshotNotes(w io.Writer, rs []result) {
	fmt.Fprintln(w, "*users rows/s* is the `users` table's rows over the time the snapshot spent writing that table (its debug log;")
	fmt.Fprintln(w, "\\* marks the process's wall time instead); *all tables* is every row over the process's wall time. DuckDB")
	fmt.Fprintln(w, "loads usersync's `users` files into an in-memory table first (not timed), then `COPY t TO … (FORMAT parquet,")
	fmt.Fprintf(w, "COMPRESSION zstd)` is timed (best of %d); its RSS includes node and the loaded table. Targets: users ≥ 25%% of DuckDB's\n", duckdbRepeat)
	fmt.Fprintln(w, "rows/s on 2 threads, checked against DuckDB's faster run (on a loaded machine 1 thread can beat 2); peak RSS < 300 MB")
	fmt.Fprintln(w, "(286 MiB) at 1M users.")
	for _, r := range rs {
		if r.snap == nil {
			continue
		}
		var parts []string
		for _, t := range r.snap.perTable {
			parts = append(parts, fmt.Sprintf("%s %d rows %.1fs %.1f MiB", t.name, t.rows, t.time.Seconds(), float64(t.bytes)/(1<<20)))
		}
		fmt.Fprintf(w, "Per table at %d users: %s.\n", r.users, strings.Join(parts, ", "))
	}
	for _, r := range rs {
		if r.snap != nil && len(r.snap.duck) > 0 {
			fmt.Fprintf(w, "DuckDB %s (npm %s).\n", r.snap.duck[0].Version, duckdbPackage)
			break
		}
		if r.snap != nil && r.snap.duckSkipped != "" {
			fmt.Fprintf(w, "DuckDB not run (%s).\n", r.snap.duckSkipped)
			break
		}
	}
}

// printGrowth prints how the backfill and the snapshot grow with the number
// of users: time per row and peak RSS at each size, and the time per row
// relative to the smallest size.
func printGrowth(w io.Writer, rs []result) {
	if len(rs) == 0 {
		return
	}
	us := func(d time.Duration, n int64) float64 { return float64(d.Microseconds()) / float64(n) }
	fmt.Fprintln(w, "Growth with the number of users: time per row (× the first size) and peak RSS")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| users | backfill: time, µs/user, RSS | snapshot (all tables): time, µs/row, RSS | snapshot `users`: time, µs/row | DuckDB `users` (2 threads): COPY time, µs/row, process peak RSS |")
	fmt.Fprintln(w, "|---:|---|---|---|---|")
	first := rs[0]
	rel := func(v, base float64) string {
		if base <= 0 {
			return ""
		}
		return fmt.Sprintf(" (×%.2f)", v/base)
	}
	for _, r := range rs {
		full := us(r.fullTime, int64(r.users))
		snap, users, duck := "n/a", "n/a", "n/a"
		if s := r.snap; s != nil {
			var base, baseUsers float64
			if f := first.snap; f != nil {
				base, baseUsers = us(f.wall, f.rows), us(f.usersTime, f.usersRows)
			}
			v, vu := us(s.wall, s.rows), us(s.usersTime, s.usersRows)
			snap = fmt.Sprintf("%.1fs, %.1f%s, %.0f MiB", s.wall.Seconds(), v, rel(v, base), s.rss)
			users = fmt.Sprintf("%.1fs, %.1f%s", s.usersTime.Seconds(), vu, rel(vu, baseUsers))
			if len(s.duck) > 0 {
				d := s.duck[0]
				var baseDuck float64
				if f := first.snap; f != nil && len(f.duck) > 0 {
					baseDuck = f.duck[0].Seconds * 1e6 / float64(f.duck[0].Rows)
				}
				vd := d.Seconds * 1e6 / float64(d.Rows)
				duck = fmt.Sprintf("%.2fs, %.2f%s, %.0f MiB", d.Seconds, vd, rel(vd, baseDuck), d.rss)
			}
		}
		fmt.Fprintf(w, "| %d | %.1fs, %.0f%s, %.0f MiB | %s | %s | %s |\n", r.users, r.fullTime.Seconds(), full,
			rel(full, us(first.fullTime, int64(first.users))), r.fullRSS, snap, users, duck)
	}
}

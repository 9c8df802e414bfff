package jobcost

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Statement is one statement the server logged (log_statement = all).
type Statement struct {
	At   time.Time
	Pid  int
	Text string
}

// logPrefix is the log_line_prefix StatementLog sets: the time in
// milliseconds (log_timezone UTC) and the backend's process id.
const logPrefix = "%m [%p] "

var prefixed = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)

var logLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC \[(\d+)\] LOG:  (?:statement|execute [^:]*): (.*)$`)

// StatementLog logs every statement of the server (a private one: it
// changes its configuration) from now until the returned function is called,
// which turns the logging off and returns the statements logged. The server
// must write its log to server.log in its data directory (deploy/dev/postgres.sh).
func StatementLog(ctx context.Context, pool *pgxpool.Pool) (func(context.Context) ([]Statement, error), error) {
	var dir string
	if err := pool.QueryRow(ctx, `SHOW data_directory`).Scan(&dir); err != nil {
		return nil, fmt.Errorf("finding the server's log: %w", err)
	}
	path := filepath.Join(dir, "server.log")
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("finding the server's log: %w", err)
	}
	if err := setLogging(ctx, pool, true); err != nil {
		return nil, err
	}
	from := st.Size()
	return func(ctx context.Context) ([]Statement, error) {
		if err := setLogging(ctx, pool, false); err != nil {
			return nil, err
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the server's log: %w", err)
		}
		defer func() { _ = f.Close() }()
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return nil, fmt.Errorf("reading the server's log: %w", err)
		}
		return ParseLog(f)
	}, nil
}

// setLogging turns the statement log on or off and waits for the server to
// take it.
func setLogging(ctx context.Context, pool *pgxpool.Pool, on bool) error {
	stmts := []string{`ALTER SYSTEM RESET log_statement`, `ALTER SYSTEM RESET log_line_prefix`, `ALTER SYSTEM RESET log_timezone`}
	if on {
		stmts = []string{`ALTER SYSTEM SET log_statement = 'all'`, `ALTER SYSTEM SET log_line_prefix = '` + logPrefix + `'`, `ALTER SYSTEM SET log_timezone = 'UTC'`}
	}
	for _, s := range append(stmts, `SELECT pg_reload_conf()`) {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("setting the statement log: %w", err)
		}
	}
	time.Sleep(500 * time.Millisecond) // each backend reloads at its next statement or idle wake-up
	return nil
}

// ParseLog reads the statements of a server log written with logPrefix.
func ParseLog(r io.Reader) ([]Statement, error) {
	var out []Statement
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	open := false // the last line was a statement's: unprefixed lines continue it
	for sc.Scan() {
		line := sc.Text()
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			if open && !prefixed.MatchString(line) {
				out[len(out)-1].Text += "\n" + line
			} else {
				open = false
			}
			continue
		}
		open = true
		at, err := time.Parse("2006-01-02 15:04:05.000", m[1])
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(m[2])
		out = append(out, Statement{At: at, Pid: pid, Text: m[3]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the server's log: %w", err)
	}
	return out, nil
}

// Count shares, into c, the statements made within [from, to] among the
// jobs running when each was logged (equally), Between when none was, and
// likewise the commits: a COMMIT, or a statement outside a transaction block
// (each its own transaction; a pipeline of several without BEGIN commits
// once, and counts as several here). It returns the statements and commits
// in all and the temporary tables created.
func (c Costs) Count(stmts []Statement, jobs []Job, from, to time.Time) (statements, commits, temps int) {
	sorted := sortedJobs(jobs)
	inTx := map[int]bool{}
	for _, s := range stmts {
		word := leading(s.Text)
		commit := false
		switch {
		case txStart.MatchString(word):
			inTx[s.Pid] = true
		case word == "commit" || word == "end" || strings.HasPrefix(word, "commit "):
			commit, inTx[s.Pid] = true, false
		case word == "rollback" || strings.HasPrefix(word, "rollback "):
			inTx[s.Pid] = false
		default:
			commit = !inTx[s.Pid]
		}
		if s.At.Before(from) || s.At.After(to) {
			continue
		}
		statements++
		if commit {
			commits++
		}
		if isTempTable(word) {
			temps++
		}
		kinds := running(sorted, s.At)
		if len(kinds) == 0 {
			kinds = []string{Between}
		}
		for _, k := range kinds {
			c.of(k).Statements += 1 / float64(len(kinds))
			if commit {
				c.of(k).commit(word, 1/float64(len(kinds)))
			}
		}
	}
	return statements, commits, temps
}

func (c *Cost) commit(stmt string, share float64) {
	c.Commits += share
	if c.Committers == nil {
		c.Committers = map[string]float64{}
	}
	if len(stmt) > 80 {
		stmt = stmt[:80]
	}
	c.Committers[stmt] += share
}

// Top returns the n statements that made the most of the kind's commits,
// each with its commits per job.
func (c *Cost) Top(n int) []string {
	type kv struct {
		stmt string
		n    float64
	}
	var all []kv
	for s, v := range c.Committers {
		all = append(all, kv{s, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || (all[i].n == all[j].n && all[i].stmt < all[j].stmt) })
	var out []string
	for i := 0; i < n && i < len(all); i++ {
		out = append(out, fmt.Sprintf("%.2f  %s", all[i].n/float64(max(c.Jobs, 1)), all[i].stmt))
	}
	return out
}

// leading is a statement's text in lower case without its leading comment
// lines, blanks and final semicolon.
func leading(text string) string {
	var keep []string
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(l); t != "" && (len(keep) > 0 || !strings.HasPrefix(t, "--")) {
			keep = append(keep, t)
		}
	}
	return strings.ToLower(strings.TrimSuffix(strings.Join(keep, " "), ";"))
}

var txStart = regexp.MustCompile(`^(?:begin|start\s+transaction)\b`)

var tempTable = regexp.MustCompile(`^create\s+(?:(?:global|local)\s+)?(?:temp|temporary)\s+table\b`)

func isTempTable(lower string) bool { return tempTable.MatchString(lower) }

// running returns the kinds of the jobs running at t, one entry a job.
func running(sorted []Job, t time.Time) []string {
	var kinds []string
	for _, j := range sorted {
		if j.Start.After(t) {
			break
		}
		if !j.End.Before(t) {
			kinds = append(kinds, j.Kind)
		}
	}
	return kinds
}

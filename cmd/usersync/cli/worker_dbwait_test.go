package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// dbProxy forwards a loopback port to the test database once opened; until
// then the port refuses connections, as a database that is down does.
type dbProxy struct {
	url    string // DATABASE_URL through the proxy
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	wg     sync.WaitGroup
}

// newDBProxy reserves a port for dsn's database (a URL), not yet open.
func newDBProxy(t *testing.T, dsn string) *dbProxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("the test database's DATABASE_URL is not a URL with a host: the proxy needs one")
	}
	p := &dbProxy{addr: freeAddr(t), target: u.Host}
	u.Host = p.addr
	p.url = u.String()
	t.Cleanup(p.close)
	return p
}

// open starts forwarding: the database answers from now on.
func (p *dbProxy) open(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listening on the proxy's port: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
			p.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.Close() })
		}
	})
}

func (p *dbProxy) close() {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// logLine is a line of the worker's JSON log.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Check string `json:"check"`
}

// waitLines returns the log lines about waiting for the database.
func waitLines(t *testing.T, logs string) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var ll logLine
		if json.Unmarshal([]byte(l), &ll) == nil && (strings.Contains(ll.Msg, "for its database") || strings.Contains(ll.Msg, "waiting for the database")) {
			out = append(out, ll)
		}
	}
	return out
}

// TestWorkerWaitsForItsDatabase: a worker started while its
// database refuses connections does not exit: /healthz answers 200, /readyz
// 503 saying it waits for the database, /metrics reports the database down
// (what UsersyncDatabaseDown alerts on), and its tries are logged without a
// flood, the first at ERROR with what to check. Once the database answers,
// it becomes ready and runs a scheduled sync, without a restart.
func TestWorkerWaitsForItsDatabase(t *testing.T) {
	t.Parallel()
	c := newCLIEnv(t, apisim.Options{Seed: 41, Users: 120})
	proxy := newDBProxy(t, c.env["DATABASE_URL"])
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(c, map[string]string{"DATABASE_URL": proxy.url, "USERSYNC_HTTP_ADDR": addr,
		"USERSYNC_SYNC_SCHEDULE": "@every 2s"}))
	alive := func() {
		select {
		case code := <-w.done:
			w.done <- code
			t.Fatalf("the worker exited %d while its database was down", code)
		default:
		}
	}
	base := "http://" + addr
	answers := func(path string, want int) func() bool {
		return func() bool {
			alive()
			resp, err := http.Get(base + path)
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			return resp.StatusCode == want
		}
	}
	waitFor(t, "/healthz while the database is down", 15*time.Second, answers("/healthz", http.StatusOK))
	began := time.Now()
	time.Sleep(4 * time.Second) // tries at about 0, 1 and 3 s
	alive()
	if code, body := get(t, base+"/readyz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the database") {
		t.Errorf("/readyz while the database is down: %d %q", code, body)
	}
	if code, metrics := get(t, base+"/metrics", ""); code != http.StatusOK || !strings.Contains(metrics, "\nusersync_database_up{schema=\""+c.store.Schema()+"\"} 0\n") {
		t.Errorf("/metrics while the database is down: %d, %s", code, grepLines(metrics, "usersync_database"))
	}
	if code, _ := get(t, base+"/riverui/", ""); code != http.StatusServiceUnavailable {
		t.Errorf("/riverui/ while the database is down: %d, want 503", code)
	}
	lines := waitLines(t, w.logs.String())
	if most := int(time.Since(began).Seconds()) + 1; len(lines) < 2 || len(lines) > most {
		t.Errorf("%d log lines about the database in %s, want 2 to %d (one per try)", len(lines), time.Since(began).Round(time.Second), most)
	}
	if len(lines) > 0 && (lines[0].Level != "ERROR" || !strings.Contains(lines[0].Check, "DATABASE_URL")) {
		t.Errorf("the first line about the database is not an ERROR saying what to check: %+v", lines[0])
	}
	for _, l := range lines[min(1, len(lines)):] {
		if l.Level == "ERROR" {
			t.Errorf("the same failure logged at ERROR again: %+v", l)
		}
	}

	proxy.open(t)
	waitFor(t, "/readyz once the database answers", 60*time.Second, answers("/readyz", http.StatusOK))
	waitFor(t, "a scheduled sync", 60*time.Second, func() bool {
		return c.query(t, `SELECT count(*) FROM $schema.sync_runs WHERE status = 'succeeded'`) >= 1
	})
	if _, metrics := get(t, base+"/metrics", ""); !strings.Contains(metrics, "\nusersync_database_up{schema=\""+c.store.Schema()+"\"} 1\n") ||
		!strings.Contains(metrics, "usersync_api_requests_total") {
		t.Errorf("/metrics once working lacks the database up or the API counters:\n%s", grepLines(metrics, "usersync_"))
	}
	if !strings.Contains(w.logs.String(), "the database answers: the worker starts") {
		t.Error("the worker did not log that the database answers")
	}
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

// TestWorkerStopsWhileWaitingForItsDatabase: SIGTERM while
// the worker process waits for its database ends it at once with exit 0.
func TestWorkerStopsWhileWaitingForItsDatabase(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	env := workerEnv(&cliEnv{env: map[string]string{"DATABASE_URL": "postgres://usersync@" + freeAddr(t) + "/none?sslmode=disable",
		"USERSYNC_API_URL": "http://127.0.0.1:1", "USERSYNC_API_TOKEN": "cli-test-token"}}, map[string]string{"USERSYNC_HTTP_ADDR": addr})
	cmd := exec.Command(binary(t), "worker")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("worker logs:\n%s", logs.String())
		}
	})
	waitFor(t, "/healthz while the database is down", 30*time.Second, func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the worker exited while its database was down: %v", err)
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("worker exit after SIGTERM while waiting: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the worker took %s to stop", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop within 10 s of SIGTERM")
	}
	if !strings.Contains(logs.String(), "worker stopped while waiting for its database") {
		t.Error("the worker did not log that it stopped while waiting")
	}
}

// TestWorkerWaitsForMigrations: a worker started before
// `usersync migrate` ran (a Kubernetes Deployment applied with its migration
// Job) waits, not ready and saying why, and works once the migration ran.
func TestWorkerWaitsForMigrations(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 42, Users: 50}))
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 2)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": schematest.NewSchemaName(t, pool),
		"USERSYNC_READER_ROLE": "", "USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "cli-test-token"}
	addr := freeAddr(t)
	w := startWorker(t, workerEnv(&cliEnv{env: env}, map[string]string{"USERSYNC_HTTP_ADDR": addr, "USERSYNC_SYNC_SCHEDULE": "@every 2s"}))
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, "/readyz to say the schema is not migrated", 30*time.Second, func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "run usersync migrate first")
	})
	if code, _, errs := run(t, env, "migrate"); code != ExitOK {
		t.Fatalf("migrate: %s", errs)
	}
	waitFor(t, "/readyz once migrated", 60*time.Second, func() bool {
		code, _ := readyz()
		return code == http.StatusOK
	})
	waitFor(t, "a scheduled sync", 60*time.Second, func() bool {
		var n int64
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM "`+env["USERSYNC_SCHEMA"]+`".sync_runs WHERE status = 'succeeded'`).Scan(&n)
		return err == nil && n >= 1
	})
	if code := w.stop(t); code != ExitOK {
		t.Errorf("worker exit %d", code)
	}
}

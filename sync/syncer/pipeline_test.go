package syncer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// The tests of the pipeline's rules (sync/syncer/pipeline.go): each fails
// when its rule is broken. A page is held in flight by a trigger that
// sleeps on the insert of one of its users (onInsert).

// pipeEnv is a simulator's users typed into pages of 10, as a walk sorted
// by updatedAt pages them, a run to write them under, and the events the
// test notes, in the order they happen.
type pipeEnv struct {
	*testEnv
	pages  [][]normalize.Row
	users  *users.Store
	runID  int64
	mu     sync.Mutex
	events []string
}

func newPipeEnv(t *testing.T, n int) *pipeEnv {
	t.Helper()
	e := &pipeEnv{testEnv: newEnv(t, apisim.Options{Users: n})}
	norm := normalize.New(schema.User())
	walk := e.client.Collection("users", jsonapi.Query{}.Sort("updatedAt").PageSize(10))
	for {
		p, err := walk.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		rows := make([]normalize.Row, 0, len(p.Data))
		for _, r := range p.Data {
			row, err := norm.Row(r)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
		}
		e.pages = append(e.pages, rows)
	}
	var err error
	if e.users, err = users.New(e.store); err != nil {
		t.Fatal(err)
	}
	if e.runID, err = e.store.Runs().Start(context.Background(), warehouse.KindFull, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *pipeEnv) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf(format, args...))
}

// before reports whether event a was noted before event b.
func (e *pipeEnv) before(a, b string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	i, j := slices.Index(e.events, a), slices.Index(e.events, b)
	return i >= 0 && j >= 0 && i < j
}

// pipeline is a pipeline from the run's first checkpoint that notes
// "commit N" when its Nth page commits.
func (e *pipeEnv) pipeline(writers int) *syncer.Pipeline {
	return syncer.NewPipeline(e.users, warehouse.Checkpoint{RunID: e.runID}, writers, nil, func(cp warehouse.Checkpoint) {
		e.note("commit %d", cp.Progress.Pages)
	})
}

// storedPages is the page count of the run's stored checkpoint.
func (e *pipeEnv) storedPages() (int64, error) {
	var n int64
	err := e.store.Pool().QueryRow(context.Background(), `SELECT pages FROM "`+e.store.Schema()+`".sync_runs WHERE run_id = $1`, e.runID).Scan(&n)
	return n, err
}

// TestPipelineCommitsInOrder: pages commit in the order they were added,
// each with the checkpoint after it, passed from page to page (from a
// resumed run's), and each is released once its commit is in the
// warehouse. Page 1 is held in flight, so that page 2, prepared meanwhile,
// would commit first if nothing held it back.
func TestPipelineCommitsInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newPipeEnv(t, 40)
	e.onInsert(t, e.pages[0][0].ID, 0.5, false)
	start := warehouse.Checkpoint{RunID: e.runID, Progress: warehouse.Progress{Pages: 5, Fetched: 50, Requests: 9}}
	var committed []warehouse.Checkpoint
	var released []int
	var early []string
	// The requests counted when a page's checkpoint is written: 10 more
	// than the pages before it.
	p := syncer.NewPipeline(e.users, start, 2, func(pr *warehouse.Progress) { pr.Requests = pr.Pages + 10 },
		func(cp warehouse.Checkpoint) { e.mu.Lock(); committed = append(committed, cp); e.mu.Unlock() })
	defer func() { _ = p.Wait() }()
	for i, rows := range e.pages {
		next := fmt.Sprintf("http://x/next/%d", i+2)
		if i == len(e.pages)-1 {
			next = ""
		}
		release := func() {
			stored, err := e.storedPages()
			e.mu.Lock()
			defer e.mu.Unlock()
			released = append(released, i)
			if err != nil || stored < int64(6+i) {
				early = append(early, fmt.Sprintf("page %d released with %d pages stored (%v)", i+1, stored, err))
			}
		}
		if err := p.AddPage(ctx, rows, next, release); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(released, []int{0, 1, 2, 3}) {
		t.Errorf("pages released (so committed) in the order %v, want 0 1 2 3", released)
	}
	for _, m := range early {
		t.Error(m)
	}
	var got []string
	for _, cp := range committed {
		got = append(got, fmt.Sprintf("%d/%d/%d/%s", cp.Progress.Pages, cp.Progress.Fetched, cp.Progress.Requests, cp.NextURL))
	}
	want := []string{"6/60/15/http://x/next/2", "7/70/16/http://x/next/3", "8/80/17/http://x/next/4", "9/90/18/"}
	if !slices.Equal(got, want) {
		t.Errorf("checkpoints committed (pages/fetched/requests/next):\n got %v\nwant %v", got, want)
	}
	if cp := p.Checkpoint(); cp.Progress.Pages != 9 || cp.Progress.Inserted != 40 || cp.NextURL != "" {
		t.Errorf("checkpoint after the pages: %+v", cp)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE run_id = $1 AND pages = 9 AND fetched = 90 AND inserted = 40 AND requests = 18 AND next_url IS NULL`, e.runID); n != 1 {
		t.Error("the stored checkpoint is not the last page's")
	}
}

// TestPipelineBoundsWriters: at most Writers pages are in flight. Page 1
// is held in flight: Add takes pages until Writers are, then waits for
// page 1 to commit before it takes another.
func TestPipelineBoundsWriters(t *testing.T) {
	t.Parallel()
	for _, writers := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(writers, " writers"), func(t *testing.T) {
			t.Parallel()
			e := newPipeEnv(t, 30)
			e.onInsert(t, e.pages[0][0].ID, 0.5, false)
			p := e.pipeline(writers)
			defer func() { _ = p.Wait() }()
			for i, rows := range e.pages {
				if err := p.AddPage(context.Background(), rows, "", nil); err != nil {
					t.Fatal(err)
				}
				e.note("added %d", i+1)
			}
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			for page := 2; page <= 3; page++ {
				waited := e.before("commit 1", fmt.Sprint("added ", page))
				if want := page > writers; waited != want {
					t.Errorf("page %d waited for page 1: %v, want %v (events %v)", page, waited, want, e.events)
				}
			}
		})
	}
}

// TestPipelineWaitsForASharedUser: a page holding a user of a page in
// flight waits for that page to commit before it is written (both would
// insert the user); a page sharing none does not wait
// (TestPipelineBoundsWriters).
func TestPipelineWaitsForASharedUser(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, 20)
	e.onInsert(t, e.pages[0][0].ID, 0.5, false)
	shared := e.pages[0][len(e.pages[0])-1]
	p := e.pipeline(2)
	defer func() { _ = p.Wait() }()
	for i, rows := range [][]normalize.Row{e.pages[0], append(slices.Clone(e.pages[1]), shared)} {
		if err := p.AddPage(context.Background(), rows, "", nil); err != nil {
			t.Fatal(err)
		}
		e.note("added %d", i+1)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if !e.before("commit 1", "added 2") {
		t.Errorf("the page sharing a user was taken while page 1 was in flight (events %v)", e.events)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.user_versions WHERE user_id = $1`, shared.ID); n != 1 {
		t.Errorf("the shared user has %d versions, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n != 20 {
		t.Errorf("%d users stored, want 20", n)
	}
}

// TestPipelineStopsAtFailure: a page that fails stops the pipeline. Page 2
// fails after a while, so that page 3 is prepared meanwhile: page 3 does not
// commit, no page from page 2 on is released, the checkpoint stays page 1's,
// Failed does not wait for the pages in flight, and Add (which then does
// not take its page) and Wait return page 2's error.
func TestPipelineStopsAtFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newPipeEnv(t, 40)
	e.onInsert(t, e.pages[1][0].ID, 0.5, true)
	p := e.pipeline(2)
	defer func() { _ = p.Wait() }()
	var released []int
	add := func(i int) error {
		return p.AddPage(ctx, e.pages[i], fmt.Sprint("http://x/", i+1), func() {
			e.mu.Lock()
			released = append(released, i)
			e.mu.Unlock()
		})
	}
	for i := range 2 {
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Failed(); err != nil {
		t.Fatalf("Failed with page 2 in flight: %v, want nil", err)
	}
	if err := add(2); err != nil {
		t.Fatalf("Add of page 3, page 2 in flight: %v", err)
	}
	addErr := add(3) // waits for page 2
	if addErr == nil || !strings.Contains(addErr.Error(), "writing page 2") || !strings.Contains(addErr.Error(), "test: refusing user") {
		t.Fatalf("Add of page 4: %v, want page 2's error", addErr)
	}
	if err := p.Wait(); err == nil || err.Error() != addErr.Error() {
		t.Errorf("Wait: %v, want page 2's error", err)
	}
	if err := p.Failed(); err == nil || err.Error() != addErr.Error() {
		t.Errorf("Failed after Wait: %v, want page 2's error", err)
	}
	if cp := p.Checkpoint(); cp.Progress.Pages != 1 || cp.NextURL != "http://x/1" {
		t.Errorf("checkpoint %+v, want page 1's", cp)
	}
	if !slices.Equal(released, []int{0}) {
		t.Errorf("pages released: %v, want page 1's only", released)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.users`); n != 10 {
		t.Errorf("%d users stored, want page 1's 10", n)
	}
	if n := e.count(t, `SELECT count(*) FROM %s.sync_runs WHERE run_id = $1 AND pages = 1 AND next_url = 'http://x/1'`, e.runID); n != 1 {
		t.Error("the stored checkpoint is not page 1's")
	}
}

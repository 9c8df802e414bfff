package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// hostileAPI serves a body of size bytes, without Content-Length, to every
// request, each once n requests have arrived (or after a few seconds), so
// that the bodies are read at once.
func hostileAPI(t *testing.T, n int64, size int) string {
	t.Helper()
	chunk := bytes.Repeat([]byte(" "), 64<<10)
	var arrived atomic.Int64
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", jsonapi.MediaType)
		_, _ = w.Write([]byte(`{"data":[`))
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestWorkerAccountsShareOneBodyBudget: the API clients the worker's fleet
// opens for its accounts share the worker's one response-memory budget:
// four registered accounts whose APIs send oversized bodies, synced at
// once, never hold more than that budget together (its high-water mark),
// where a budget per account let each hold a whole one.
func TestWorkerAccountsShareOneBodyBudget(t *testing.T) {
	t.Parallel()
	const limit, size, accounts = 1 << 20, 20 << 20, 4
	ctx := context.Background()
	tf := newTestFleet(t)
	tf.e.cfg.MaxResponseBytes, tf.e.cfg.MaxResponseMemory = limit, 2*limit
	tf.e.bodies = jsonapi.NewBodyBudget(tf.e.cfg.MaxResponseMemory)
	api := hostileAPI(t, accounts*4, size) // each sync fetches the users page and three dimension lists at once
	for i := range accounts {
		tf.add(t, fmt.Sprintf("h%d", i), newCLIEnv(t, apisim.Options{Seed: int64(60 + i), Users: 10}),
			map[string]string{"USERSYNC_API_URL": api, "USERSYNC_MAX_RETRY_TIME": "1s"})
	}
	errs := make([]error, accounts)
	var wg sync.WaitGroup
	for i := range accounts {
		acct, err := tf.f.Open(ctx, fmt.Sprintf("h%d", i))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _, errs[i] = acct.Syncer.Run(ctx, syncer.Request{Kind: warehouse.KindIncremental}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("h%d: the sync of an API sending %d-byte bodies succeeded", i, size)
		}
	}
	if peak := tf.e.bodies.Peak(); peak <= limit || peak > 2*limit+1 {
		t.Errorf("the accounts' bodies held %d bytes at once, want more than one body's limit (%d: they were read at once, under the worker's budget) and at most the one budget (%d)",
			peak, limit, 2*limit)
	}
}

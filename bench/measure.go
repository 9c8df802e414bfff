package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/syncer"
)

// result holds one dataset size's figures; rates are rows per second.
type result struct {
	users                           int
	serveRate, decodeRate, copyRate float64
	copyRates                       []float64 // each raw COPY measured
	copyCPU                         []copyCPU // each raw COPY's
	fullCPU                         []cpuTime // each replayed backfill's
	fullRates                       []float64 // each replayed backfill measured
	fullRate, fullRSS               float64   // the faster replayed backfill (see replay); the higher RSS
	pagesRates                      []float64 // each replayed backfill's users pages alone (see pagesRate)
	replayed                        int       // users pages the replay answered in a backfill
	liveRate                        float64   // the same backfill, the simulator rendering every page
	fullTime                        time.Duration
	fullRequests, minRequests       int64
	incrRequests, incrVersions      int64
	incrRate                        float64
	noopRequests                    int64
	noopTime                        time.Duration
	reconcileRequests               int64
	reconcileTime                   time.Duration
	reconcileRSS                    float64
	haveReconcile                   bool
	snap                            *snapshotResult // nil: this usersync has no snapshot command
}

// sized is the bench at one dataset size: the schema it syncs into and
// the address of the simulated API.
type sized struct {
	*bench
	n    int
	name string
	api  string
}

// env is usersync's environment for a schema of this size's database.
func (s sized) env(schemaName string) []string {
	return append(os.Environ(), "DATABASE_URL="+s.pgURL, "USERSYNC_SCHEMA="+schemaName, "USERSYNC_READER_ROLE=",
		"USERSYNC_API_URL="+s.api, "USERSYNC_API_TOKEN=bench", "USERSYNC_PAGE_SIZE=1000", "USERSYNC_LOG_LEVEL=warn")
}

func (b *bench) measure(ctx context.Context, n int) (result, error) {
	r := result{users: n}
	name := fmt.Sprintf("bench_%d", n)
	if err := b.dropSchema(ctx, name); err != nil {
		return r, err
	}
	fmt.Fprintf(b.log, "bench: %d users: building the simulated dataset\n", n)
	sim := apisim.New(apisim.Options{Seed: 1, Users: n})
	rp := newReplay(sim)
	srv := httptest.NewServer(rp)
	defer srv.Close()
	s := sized{bench: b, n: n, name: name, api: srv.URL}
	if _, _, _, err := b.command(ctx, s.env(name), "migrate"); err != nil {
		return r, err
	}
	r.minRequests = int64(ceilDiv(n, 1000) + ceilDiv(len(sim.Resources("team")), 1000) + 1 + 1)
	if err := s.copiesAndBackfills(ctx, &r, rp); err != nil {
		return r, err
	}
	rp.set(passThrough)
	if err := s.liveBackfill(ctx, &r); err != nil {
		return r, err
	}
	sim.UpdateUsers(n / 100)
	if err := s.incremental(ctx, &r); err != nil {
		return r, err
	}
	if err := s.reconcileAndSnapshot(ctx, &r); err != nil {
		return r, err
	}
	_ = b.dropSchema(ctx, name)
	return r, nil
}

// copiesAndBackfills measures the limits, then the raw COPY and the
// replayed backfill twice each, alternately (this machine's speed drifts
// by tens of percent within minutes): the ratio is taken between the
// faster of each.
func (s sized) copiesAndBackfills(ctx context.Context, r *result, rp *replay) error {
	fmt.Fprintf(s.log, "bench: %d users: limits (serve, decode, raw COPY)\n", s.n)
	rp.set(recording)
	if err := s.rawCopy(ctx, r, true); err != nil {
		return err
	}
	rp.set(replaying)
	for i, target := range []string{s.name, s.name + "_again"} {
		if i > 0 {
			fmt.Fprintf(s.log, "bench: %d users: raw COPY again\n", s.n)
			if err := s.rawCopy(ctx, r, false); err != nil {
				return err
			}
			if _, _, _, err := s.command(ctx, s.env(target), "migrate"); err != nil {
				return err
			}
		}
		if err := s.replayedBackfill(ctx, r, rp, target); err != nil {
			return err
		}
		if i > 0 {
			if err := s.dropSchema(ctx, target); err != nil {
				return err
			}
		}
	}
	r.copyRate = slices.Max(r.copyRates)
	return nil
}

// rawCopy walks the pages once more for a raw COPY (see limits); the
// first walk also sets r's serving and decoding rates.
func (s sized) rawCopy(ctx context.Context, r *result, first bool) error {
	s.quiesce(ctx)
	rates := r
	if !first {
		rates = nil
	}
	rate, cpu, err := s.limits(ctx, rates, s.api, s.name)
	if err != nil {
		return err
	}
	r.copyRates, r.copyCPU = append(r.copyRates, rate), append(r.copyCPU, cpu)
	return nil
}

// replayedBackfill times a full backfill into target with the users pages
// replayed.
func (s sized) replayedBackfill(ctx context.Context, r *result, rp *replay, target string) error {
	fmt.Fprintf(s.log, "bench: %d users: full backfill, users pages replayed\n", s.n)
	s.quiesce(ctx)
	rp.set(replaying) // counts this backfill's replayed pages from zero
	sum, err := s.backfill(ctx, s.env(target))
	if err != nil {
		return err
	}
	r.pagesRates, r.fullCPU = append(r.pagesRates, sum.pagesRate), append(r.fullCPU, sum.cpu)
	// Pages the recording did not hold are rendered by the simulator on
	// these cores: the backfill would not be the one this column means.
	if r.replayed = rp.set(replaying); int64(r.replayed) < sum.Pages {
		return fmt.Errorf("the replay answered %d of the backfill's %d users pages: its requests differ from the recording walk's", r.replayed, sum.Pages)
	}
	rate := float64(sum.Fetched) / sum.wall.Seconds()
	r.fullRates = append(r.fullRates, rate)
	if rate > r.fullRate {
		r.fullRate, r.fullTime = rate, sum.wall
	}
	r.fullRSS, r.fullRequests = max(r.fullRSS, sum.rss), max(r.fullRequests, sum.Requests)
	return nil
}

// liveBackfill times a full backfill with the simulator rendering every
// page, into a schema of its own.
func (s sized) liveBackfill(ctx context.Context, r *result) error {
	fmt.Fprintf(s.log, "bench: %d users: full backfill, simulator rendering every page\n", s.n)
	live := s.name + "_live"
	if _, _, _, err := s.command(ctx, s.env(live), "migrate"); err != nil {
		return err
	}
	s.quiesce(ctx)
	lb, err := s.backfill(ctx, s.env(live))
	if err != nil {
		return err
	}
	r.liveRate = float64(lb.Fetched) / lb.wall.Seconds()
	return s.dropSchema(ctx, live)
}

// incremental times an incremental sync after the simulator changed 1% of
// the users, then a no-op one right after it.
func (s sized) incremental(ctx context.Context, r *result) error {
	fmt.Fprintf(s.log, "bench: %d users: incremental after 1%% changed\n", s.n)
	env := s.env(s.name)
	out, d, _, err := s.command(ctx, env, "sync", "--json")
	if err != nil {
		return err
	}
	var sum syncer.Summary
	_ = json.Unmarshal([]byte(out), &sum)
	r.incrRequests, r.incrVersions, r.incrRate = sum.Requests, sum.Versions, float64(sum.Fetched)/d.Seconds()

	if out, d, _, err = s.command(ctx, env, "sync", "--json"); err != nil {
		return err
	}
	sum = syncer.Summary{}
	_ = json.Unmarshal([]byte(out), &sum)
	r.noopRequests, r.noopTime = sum.Requests, d
	return nil
}

// reconcileAndSnapshot times a reconcile and a snapshot, each when this
// usersync has the command.
func (s sized) reconcileAndSnapshot(ctx context.Context, r *result) error {
	env := s.env(s.name)
	if strings.Contains(s.commands, "  reconcile ") {
		fmt.Fprintf(s.log, "bench: %d users: reconcile\n", s.n)
		out, d, rss, err := s.command(ctx, env, "reconcile", "--json")
		if err != nil {
			return err
		}
		var rec struct {
			Requests int64 `json:"requests"`
		}
		_ = json.Unmarshal([]byte(out), &rec)
		r.haveReconcile, r.reconcileRequests, r.reconcileTime, r.reconcileRSS = true, rec.Requests, d, rss
	}
	if strings.Contains(s.commands, "  snapshot ") {
		fmt.Fprintf(s.log, "bench: %d users: snapshot\n", s.n)
		var err error
		if r.snap, err = s.snapshot(ctx, env, s.name); err != nil {
			return err
		}
	}
	return nil
}

func ceilDiv(a, b int) int { return int(math.Ceil(float64(a) / float64(b))) }

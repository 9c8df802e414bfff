package syncer

import (
	"bytes"
	"context"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
	"github.com/usersync/usersync/sync/warehouse/users"
)

// quietHint is what a Syncer keeps of its last incremental run that read
// one page, changed nothing and left the watermark where it was: Quiet
// lists the same before touching the database and, when every list and
// the page are the same again, records the run in one statement, which
// checks that the warehouse is still as the quiet path's anchor left it
// (the last run, of any process, that read this page and changed nothing).
type quietHint struct {
	watermark time.Time
	policyID  int64
	page      []byte // the digest of its users page (pageDigest)
}

// QuietHint is what Quiet starts from, opaque: a caller that closes a
// Syncer and opens another for the same warehouse (a worker's bounded cache
// of accounts) hands it on with SetQuietHint. Quiet's statement checks it
// against the warehouse, so a stale one only costs a run in full.
type QuietHint struct{ h *quietHint }

// QuietHint returns the Syncer's hint (empty when it has none).
func (s *Syncer) QuietHint() QuietHint { return QuietHint{s.quiet.Load()} }

// SetQuietHint makes h the Syncer's hint.
func (s *Syncer) SetQuietHint(h QuietHint) { s.quiet.Store(h.h) }

// quietAnchor is the anchor r's end records when r, which is about to
// succeed with sum, read one users page and changed nothing (Finish records
// it only if the watermark stays), or nil.
func (r *run) quietAnchor(sum Summary) *warehouse.QuietAnchor {
	if r.page == nil || r.resumed || sum.Changed() || sum.Quarantined > 0 || r.future > 0 || r.noTeamsData > 0 ||
		r.startWM.IsZero() {
		return nil
	}
	return &warehouse.QuietAnchor{Page: r.page, Watermark: r.startWM}
}

// noteQuiet keeps the hint of r, which succeeded with sum, or forgets the
// last one when r cannot give one.
func (s *Syncer) noteQuiet(r *run, sum Summary) {
	if r.quietAnchor(sum) == nil || sum.Watermark == nil || !sum.Watermark.Equal(r.startWM) {
		s.quiet.Store(nil)
		return
	}
	s.quiet.Store(&quietHint{watermark: r.startWM, policyID: r.policyID, page: r.page})
}

// pageDigest is the digest of a users page typed under policyID (as a
// dimension list's, see listDigest), or nil when the page repeats an id.
func pageDigest(rows []normalize.Row, policyID int64) []byte {
	d := newListDigest(schema.User(), policyID)
	for i := range rows {
		d.addRow(&rows[i])
	}
	if len(d.typed) != len(rows) {
		return nil
	}
	return d.sum()
}

// Quiet runs an incremental request as the Syncer's last run that
// changed nothing did, without the sync lock, and records it in one
// statement (Runs.Quiet, under req.Guard) when nothing differs. ok is false
// when anything does, when the Syncer has no such run, or on any error:
// the caller then calls Run, which repeats this one's requests (one per
// dimension list and one users page) and meets the error again.
func (s *Syncer) Quiet(ctx context.Context, req Request) (sum Summary, ok bool) {
	h := s.quiet.Load()
	if h == nil || req.Kind != warehouse.KindIncremental || closed(req.Drain) {
		return Summary{}, false
	}
	r := &run{s: s, req: req, started: s.cfg.Now(), statsBefore: s.client.Stats(), policyID: h.policyID}
	r.horizon = r.started.Add(s.cfg.MaxFutureSkew)
	from := h.watermark.Add(-s.cfg.Lookback).Truncate(time.Millisecond)
	r.from = &from
	walk := r.usersPages(ctx, r.from)
	defer walk.Stop()
	digests, dims, ok := s.quietLists(ctx, h.policyID)
	if !ok {
		return Summary{}, false
	}
	rows, ok := quietPage(walk, h)
	if !ok {
		return Summary{}, false
	}
	if r.count(rows); r.future > 0 || r.noTeamsData > 0 {
		return Summary{}, false
	}
	r.dims = dims
	r.cp = users.Advance(warehouse.Checkpoint{PolicyID: h.policyID, Horizon: r.horizon}, rows,
		warehouse.Counts{Unchanged: int64(len(rows))})
	sum = r.summary()
	anchor := warehouse.QuietAnchor{Page: h.page, Watermark: h.watermark}
	id, ok, err := s.store.Runs().Quiet(ctx, warehouse.QuietRun{Anchor: anchor, Digests: digests,
		PolicyID: h.policyID, Fingerprint: s.cfg.Policy.Fingerprint(), Started: r.started, From: r.from,
		Checkpoint: r.cp, CanWrite: r.canWrite, JobID: req.JobID, Summary: sum, Guard: req.Guard})
	if err != nil || !ok {
		return Summary{}, false // the full run meets the error again, and records it
	}
	sum.RunID, sum.Watermark = id, &h.watermark
	s.cfg.Logger.InfoContext(ctx, "run finished", "run_id", id, "kind", req.Kind, "quiet", true, "pages", sum.Pages,
		"unchanged", sum.Unchanged, "requests", sum.Requests, "duration_ms", sum.Duration.Milliseconds())
	return sum, true
}

// quietLists lists every dimension as an incremental run does and returns
// each list's digest and counts by table; ok is false when a list fails or
// is longer than an incremental run holds before staging (heldPages).
func (s *Syncer) quietLists(ctx context.Context, policyID int64) (map[string][]byte, map[string]warehouse.Counts, bool) {
	dims := schema.Dimensions()
	lists := s.startLists(ctx)
	for _, l := range lists {
		defer l.Stop()
	}
	digests := make(map[string][]byte, len(dims))
	counts := make(map[string]warehouse.Counts, len(dims))
	for i, res := range dims {
		digest := newListDigest(res, policyID)
		pages := 0
		for page, err := range lists[i].Pages() {
			if err != nil || pages == heldPages {
				return nil, nil, false
			}
			pages++
			s.dimensionPage(res.Type, page, digest)
		}
		digests[res.Table] = digest.sum()
		counts[res.Table] = warehouse.Counts{Unchanged: int64(len(digest.typed)), Quarantined: digest.bad}
	}
	return digests, counts, true
}

// quietPage returns the rows of the walk's first page when it is its only
// one, every user on it typed, and the page the hint's run read.
func quietPage(walk *typedWalk, h *quietHint) ([]normalize.Row, bool) {
	for p, err := range walk.Pages() {
		if err != nil || p.NextURL != "" || p.Decoded == nil || len(p.Decoded.Rejected) > 0 {
			return nil, false
		}
		rows := p.Decoded.Rows
		d := pageDigest(rows, h.policyID)
		return rows, d != nil && bytes.Equal(d, h.page)
	}
	return nil, false
}

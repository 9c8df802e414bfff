package syncer

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

// SummaryVersion is the version of the shape of Summary and
// ReconcileSummary, as usersync sync --json and reconcile --json print them
// and sync_runs.summary keeps them: it goes up when a key is renamed or
// removed or changes meaning (docs/operations.md, JSON outputs).
const SummaryVersion = 1

// Summary is the outcome of a run, printed by `usersync sync` and stored in
// sync_runs.summary.
type Summary struct {
	Version int        `json:"version"` // SummaryVersion
	RunID   int64      `json:"run_id"`
	Kind    string     `json:"kind"`
	Resumed bool       `json:"resumed"`
	From    *time.Time `json:"from,omitempty"`
	Until   *time.Time `json:"until,omitempty"`
	// Progress holds the run's counters as its last checkpoint saved them
	// (pages, users fetched and what loading them did, requests, unknown
	// attributes).
	warehouse.Progress
	// FutureUpdatedAt counts the users whose updatedAt lay further in the
	// future than Config.MaxFutureSkew: stored, but the watermark did not
	// move to them. (A resumed run counts those of its own pages.)
	FutureUpdatedAt int64                       `json:"future_updated_at"`
	Dimensions      map[string]warehouse.Counts `json:"dimensions"`
	Membership      *MembershipSummary          `json:"membership,omitempty"`
	Duration        time.Duration               `json:"duration_ns"`
	Watermark       *time.Time                  `json:"watermark,omitempty"`
	// RateLimit is the API's rate-limit figures as the run last saw them.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	CanWrite  *bool      `json:"can_write,omitempty"`
}

// Changed says whether the run wrote anything a snapshot holds: a user, a
// team, role or profile inserted, updated or marked deleted, or a
// membership added or removed. A run that changed nothing needs no new
// snapshot.
func (s Summary) Changed() bool {
	changed := func(c warehouse.Counts) bool { return c.Inserted+c.Updated+c.Deleted > 0 }
	if changed(s.Counts) {
		return true
	}
	for _, c := range s.Dimensions {
		if changed(c) {
			return true
		}
	}
	return s.Membership != nil && s.Membership.Added+s.Membership.Removed > 0
}

// RateLimit is the API's rate limit as last seen: the requests allowed in
// its window, those left, and when the window resets.
type RateLimit struct {
	Limit     int        `json:"limit"`
	Remaining int        `json:"remaining"`
	Reset     *time.Time `json:"reset,omitempty"`
}

// rateLimitOf returns the figures of rl, or nil when the API sent none.
func rateLimitOf(rl jsonapi.RateLimit) *RateLimit {
	if rl.Limit < 0 || rl.Remaining < 0 {
		return nil
	}
	out := &RateLimit{Limit: rl.Limit, Remaining: rl.Remaining}
	if !rl.Reset.IsZero() {
		reset := rl.Reset.UTC()
		out.Reset = &reset
	}
	return out
}

// endSummary is the summary Store.EndRun keeps of a run that did not
// succeed, nil when there is nothing to keep: the client's last rate limit
// (a run that paused on a spent budget keeps what it saw, for status) and
// the credentials the API refused (status shows them until a run succeeds).
func (s *Syncer) endSummary(err error) json.RawMessage {
	out := struct {
		Version   int                 `json:"version"`
		RateLimit *RateLimit          `json:"rate_limit,omitempty"`
		Refused   *CredentialsRefused `json:"credentials_refused,omitempty"`
	}{Version: SummaryVersion}
	out.RateLimit = rateLimitOf(s.client.Stats().RateLimit)
	var ae *jsonapi.AuthError
	if errors.As(err, &ae) {
		out.Refused = &CredentialsRefused{StatusCode: ae.StatusCode, Code: ae.Code}
	}
	if out.RateLimit == nil && out.Refused == nil {
		return nil
	}
	b, merr := json.Marshal(out)
	if merr != nil {
		return nil // ints, a time and a short string: cannot fail
	}
	return b
}

// CredentialsRefused is what a run records of credentials the API or its
// token endpoint refused (a jsonapi.AuthError): never the credentials.
type CredentialsRefused struct {
	StatusCode int    `json:"status"`         // the HTTP status answered
	Code       string `json:"code,omitempty"` // the OAuth error code, such as invalid_grant
}

func (r *run) summary() Summary {
	r.fillRequests(&r.cp.Progress)
	p := r.cp.Progress
	if p.Unknown == nil {
		p.Unknown = map[string]int{}
	}
	return Summary{
		Version: SummaryVersion, RunID: r.runID, Kind: r.req.Kind, Resumed: r.resumed, From: r.from, Until: r.until,
		Progress: p, Dimensions: r.dims, Membership: r.membership, Duration: r.s.cfg.Now().Sub(r.started),
		CanWrite: r.canWrite, FutureUpdatedAt: r.future, RateLimit: rateLimitOf(r.s.client.Stats().RateLimit),
	}
}

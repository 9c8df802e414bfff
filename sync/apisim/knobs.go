package apisim

import (
	"errors"
	"fmt"
	"time"
)

// Default values of the knobs whose zero value means "use the default".
const (
	// DefaultPageSize is the page size when a request sends no page[size].
	DefaultPageSize = 50
	// MaxPageSize is the real service's cap on page[size].
	MaxPageSize = 1000
	// DefaultCountDelay is the extra latency of a collection request that
	// leaves count unset (spec §9.1: implicit counting is costly).
	DefaultCountDelay = 2 * time.Millisecond
	// DefaultCountTruncateAt is where meta.count stops counting.
	DefaultCountTruncateAt = 2_000_000
)

// Knobs are the simulator's adjustable behaviours. The zero value is a
// faithful, well-behaved service. Every knob can be set in Options (Knobs is
// embedded there) and changed while serving with Server.SetKnobs or
// Server.UpdateKnobs; a request sees one consistent snapshot.
type Knobs struct {
	// PageSizeCap caps page[size] (silently, as the real service does).
	// 0 means MaxPageSize; it may not exceed MaxPageSize.
	PageSizeCap int

	// RateLimit is the per-hour request budget. When positive every API
	// response carries x-ratelimit-limit, x-ratelimit-remaining ("N, M") and
	// x-ratelimit-reset (epoch seconds), and a request over budget gets 429
	// with Retry-After. 0 disables rate limiting and its headers.
	RateLimit int
	// RateLimitWindow is how long RateLimit's budget lasts before it is
	// whole again (x-ratelimit-reset). 0 means an hour, as the service.
	RateLimitWindow time.Duration
	// LimitHeader and ResetHeader send x-ratelimit-limit and
	// x-ratelimit-reset as the service does (HeaderSent, the zero value),
	// not at all (HeaderOmitted), or in a form a client cannot read
	// (HeaderGarbled: "100;w=3600", an HTTP date), as a proxy that strips
	// them or a changed format would. x-ratelimit-remaining and a 429's
	// Retry-After are sent regardless.
	LimitHeader, ResetHeader HeaderMode
	// RateLimitEvery answers every Nth API request with 429 and a
	// Retry-After of RetryAfter (whole seconds, rounded up). 0 = off.
	RateLimitEvery int
	// RetryAfter is the Retry-After sent by RateLimitEvery. 0 sends "0".
	RetryAfter time.Duration

	// FaultRate is the probability that an API request fails with one of
	// FaultStatuses, drawn from an RNG seeded with Options.Seed.
	FaultRate float64
	// FaultStatuses are the statuses FaultRate picks from; empty means
	// 500, 502, 503 and 504. 502 and 504 carry an HTML body, as a gateway's do.
	FaultStatuses []int
	// FailEvery fails every Nth API request with FailStatus. 0 = off.
	FailEvery int
	// FailStatus is the status of FailEvery; 0 means 503.
	FailStatus int

	// TruncateRate is the probability that a 200 response body is cut in
	// half while its headers (status, Content-Type, Content-Length of the
	// whole body) look correct; the client sees an unexpected EOF.
	TruncateRate float64
	// Latency delays every API response by a fixed duration.
	Latency time.Duration
	// CountDelay is the extra latency of a collection request without a
	// count parameter. 0 means DefaultCountDelay; negative means none.
	CountDelay time.Duration
	// CountTruncateAt caps meta.count (count_truncated is then true).
	// 0 means DefaultCountTruncateAt.
	CountTruncateAt int

	// TeamsLinksOnly sends the users' teams relationship without data, as
	// {"links":{"related":".../api/v2/teams?filter[users][id]=<user>"}},
	// unless the request includes teams.
	TeamsLinksOnly bool
	// RefuseInclude answers 400 to any include parameter, as an API that
	// does not serve compound documents would.
	RefuseInclude bool
	// StringIDs sends every id as a numeric string ("42") instead of a number.
	StringIDs bool
	// OutOfOrder shuffles the rows within each collection page; the cursor
	// stays sound because it is computed from the sorted page.
	OutOfOrder bool
	// LateVisibility makes a changed user invisible to filtered or sorted
	// collection queries until a pseudo-random delay in [0, LateVisibility)
	// after its updatedAt has passed (a lagging search index). Reads by id
	// and unfiltered default-order walks see it at once. 0 = off.
	LateVisibility time.Duration
	// OffsetPagination makes links.next use page[offset] (the deprecated
	// offset mode), so concurrent updates make a walk skip or repeat rows.
	OffsetPagination bool
	// MaxOffset refuses page[offset] above it with 400, as the real service
	// refused offsets above 10,000. 0 = no limit.
	MaxOffset int

	// SchemaDrift adds attributes the catalog does not know to every user:
	// languagePreference (string) and onboardedAt (datetime).
	SchemaDrift bool
	// WrongTypeRate is the fraction of users (chosen deterministically by id)
	// sent with one wrong-typed member: locked "yes", a string view id, a
	// numeric custom1, a string duties, an unparseable currentSignInAt or a
	// non-numeric role id.
	WrongTypeRate float64
	// HashShapedEmailEvery, when positive, sends every user whose id is a
	// multiple of it with an email of 64 lower-case hex digits (the SHA-256
	// of its id): a value shaped like a stored hash, which a personal-data
	// policy must still hash.
	HashShapedEmailEvery int
	// DenyWrite makes meta.canWrite false (provideAuthorizationMeta=true).
	DenyWrite bool
	// DenyConsent makes GET /oauth/authorize answer as if the user refused:
	// a redirect with error=access_denied and no code.
	DenyConsent bool

	// Churn mutates the dataset while serving.
	Churn Churn
}

// HeaderMode is how the simulator sends a rate-limit header.
type HeaderMode int

// The HeaderModes.
const (
	HeaderSent HeaderMode = iota
	HeaderOmitted
	HeaderGarbled
)

// Churn mutates the dataset every Every API requests, before serving that
// request: it updates Update users, creates Create users, moves Memberships
// users into or out of a team, and, every DeleteEvery rounds, deletes one
// team, role or profile in turn; every EditEvery rounds it renames one in
// turn (a role also gets another parent), and every RestoreEvery rounds it
// brings a deleted one back (see history.go).
type Churn struct {
	Every        int
	Update       int
	Create       int
	DeleteEvery  int
	Memberships  int
	EditEvery    int
	RestoreEvery int
}

// Validate reports the first invalid knob, naming it.
func (k Knobs) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(k.PageSizeCap >= 0 && k.PageSizeCap <= MaxPageSize, "PageSizeCap must be between 0 and %d", MaxPageSize)
	check(k.RateLimit >= 0, "RateLimit must not be negative")
	check(k.RateLimitWindow >= 0, "RateLimitWindow must not be negative")
	check(k.LimitHeader >= HeaderSent && k.LimitHeader <= HeaderGarbled, "LimitHeader must be HeaderSent, HeaderOmitted or HeaderGarbled")
	check(k.ResetHeader >= HeaderSent && k.ResetHeader <= HeaderGarbled, "ResetHeader must be HeaderSent, HeaderOmitted or HeaderGarbled")
	check(k.RateLimitEvery >= 0, "RateLimitEvery must not be negative")
	check(k.RetryAfter >= 0, "RetryAfter must not be negative")
	check(k.FaultRate >= 0 && k.FaultRate <= 1, "FaultRate must be between 0 and 1")
	for _, s := range k.FaultStatuses {
		check(s >= 500 && s <= 599, "FaultStatuses must hold 5xx statuses, not %d", s)
	}
	check(k.FailEvery >= 0, "FailEvery must not be negative")
	check(k.FailStatus == 0 || (k.FailStatus >= 400 && k.FailStatus <= 599), "FailStatus must be a 4xx or 5xx status")
	check(k.TruncateRate >= 0 && k.TruncateRate <= 1, "TruncateRate must be between 0 and 1")
	check(k.Latency >= 0, "Latency must not be negative")
	check(k.CountTruncateAt >= 0, "CountTruncateAt must not be negative")
	check(k.LateVisibility >= 0, "LateVisibility must not be negative")
	check(k.MaxOffset >= 0, "MaxOffset must not be negative")
	check(k.WrongTypeRate >= 0 && k.WrongTypeRate <= 1, "WrongTypeRate must be between 0 and 1")
	check(k.HashShapedEmailEvery >= 0, "HashShapedEmailEvery must not be negative")
	check(k.Churn.Every >= 0 && k.Churn.Update >= 0 && k.Churn.Create >= 0 && k.Churn.DeleteEvery >= 0,
		"Churn fields must not be negative")
	return errors.Join(errs...)
}

func (k *Knobs) pageCap() int {
	if k.PageSizeCap == 0 {
		return MaxPageSize
	}
	return k.PageSizeCap
}

func (k *Knobs) countDelay() time.Duration {
	switch {
	case k.CountDelay == 0:
		return DefaultCountDelay
	case k.CountDelay < 0:
		return 0
	}
	return k.CountDelay
}

func (k *Knobs) countCap() int {
	if k.CountTruncateAt == 0 {
		return DefaultCountTruncateAt
	}
	return k.CountTruncateAt
}

// Knobs returns the knobs in force.
func (s *Server) Knobs() Knobs {
	k := *s.knobs.Load()
	k.FaultStatuses = append([]int(nil), k.FaultStatuses...)
	return k
}

// SetKnobs replaces every knob at once; requests already running keep the
// snapshot they started with.
func (s *Server) SetKnobs(k Knobs) error {
	if err := k.Validate(); err != nil {
		return fmt.Errorf("setting knobs: %w", err)
	}
	k.FaultStatuses = append([]int(nil), k.FaultStatuses...)
	s.knobMu.Lock()
	defer s.knobMu.Unlock()
	s.knobs.Store(&k)
	return nil
}

// UpdateKnobs changes some knobs atomically: fn edits a copy of the knobs in
// force, which replaces them if valid.
//
//	sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimitEvery = 3 })
func (s *Server) UpdateKnobs(fn func(*Knobs)) error {
	s.knobMu.Lock()
	defer s.knobMu.Unlock()
	k := *s.knobs.Load()
	k.FaultStatuses = append([]int(nil), k.FaultStatuses...)
	fn(&k)
	if err := k.Validate(); err != nil {
		return fmt.Errorf("updating knobs: %w", err)
	}
	s.knobs.Store(&k)
	return nil
}

// FailNext makes the next n API requests fail with status (0 means 503),
// ahead of every other knob except authentication.
func (s *Server) FailNext(n, status int) {
	if status == 0 {
		status = 503
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.failNext, s.failNextStatus = n, status
}

// Package apisim simulates the sales-engagement API (users, teams, roles and
// profiles under /api/v2, plus POST /oauth/token) faithfully enough to sync
// against: it is the fake behind `usersync simulate`, the project's scenario
// tests and its benchmarks. It is a plain http.Handler, so a test syncs
// against it over real HTTP, and it exposes what it holds, so the test can
// check the warehouse against that ground truth.
//
//	sim := apisim.New(apisim.Options{Seed: 1, Users: 500})
//	srv := httptest.NewServer(sim)
//	defer srv.Close()
//	sim.UpdateKnobs(func(k *apisim.Knobs) { k.RateLimitEvery = 5 }) // every 5th request gets 429
//	// ... sync from srv.URL with any bearer token ...
//	ids := sim.UpdateUsers(10) // then an incremental sync should fetch them
//
// # Dataset
//
// New(Options{Seed, Users}) generates a deterministic dataset: the same
// seed, user count and clock give byte-identical responses. Users carry every
// attribute of the catalog (package schema) with realistic values: unicode
// names (é, ü, 李, emoji, quotes, <b>&), emails, IANA time zones, enum values,
// strings at exactly their maximum length, many nulls, millisecond
// timestamps, duties objects, and every relationship (role, profile,
// creator, updater, mailbox, teams and the other to-many ones). Only ~48
// bytes of state are kept per user (version, createdAt, updatedAt, role,
// profile, teams, deleted); attributes are generated on demand from
// (seed, id, version), so a million users fit in about 70 MB and build in
// about a second.
//
// # HTTP surface
//
// GET /api/v2/{users,teams,roles,profiles}[/{id}] speak JSON:API
// (application/vnd.api+json) and implement the query conventions of the
// API's documentation (§4.2–4.3): filter[attr]=v, lists a,b, inclusive
// ranges from..to with inf, the newFilterSyntax=true form
// filter[attr][gte]=…, filter[id]=1,2,3, filter[rel][id]=… (users: role,
// profile, teams; roles: parentRole; teams: users), sort=attr or -attr
// (ties broken by ascending id), include=, fields[type]= (empty: no
// attributes), count=true|false (absent: counted, after CountDelay),
// provideDataConnections and provideAuthorizationMeta. Deprecated forms
// (sort=role.name, filter[role][name]) and anything else invalid get 400
// with errors[].source.parameter. Pages are cursor-based: page[size]
// (default 50, capped silently at 1000 or PageSizeCap), and links.next is an
// absolute URL holding every original parameter plus page[after], an opaque
// base64 keyset token (sort, sort values, id), so concurrent updates never
// make a walk skip a row that did not change. page[offset] is the
// deprecated offset mode.
//
// Authentication: a bearer token is required (401 otherwise). Options.Token
// sets a static token; Options.RefreshToken turns on OAuth, where POST
// /oauth/token (grant_type=refresh_token) issues access tokens that expire
// after TokenTTL on the injected clock and rotates the refresh token. Each
// token response's scope is the one the authorization asked for
// (GET /oauth/authorize?scope=...), or users.read teams.read roles.read
// profiles.read.
//
// # Many accounts
//
// NewFleet(FleetOptions{Seed, Default, Accounts}) serves many accounts from
// one http.Handler: account NAME under AccountsPath + NAME (its base URL;
// the client appends /api/v2/...), with its own Server: a dataset seeded
// from the fleet seed and the name (AccountSeed), a static token derived
// the same way (AccountToken) unless its options name credentials, its own
// OAuth endpoints under its prefix, rate-limit budget, knobs, mutations and
// counters. Links carry the prefix. Fleet.Account(name) returns the
// account's Server; Default (the unprefixed paths) serves as New would.
// Options.Revoked and RevokeAfter revoke an account's grant from the start
// or after N requests. The accounts share the catalog's value pools, the
// user attributes' generators and the response buffers, so an account costs
// its data (BenchmarkFleetMemory):
//
//	go test -run='^$' -bench=FleetMemory -benchtime=1x ./sync/apisim/
//
// # Knobs
//
// Every knob is off by default, settable in Options and changeable while
// serving (SetKnobs, UpdateKnobs, FailNext, FailTokenNext):
//
//   - RateLimit: hourly budget, x-ratelimit-* headers, 429 with Retry-After;
//     LimitHeader, ResetHeader: x-ratelimit-limit or -reset omitted or
//     garbled; SpendRateLimit: requests other tools spent in the window;
//     RateLimitEvery: 429 on every Nth request.
//   - FaultRate/FaultStatuses, FailEvery/FailStatus, FailNext: 5xx
//     failures (502/504 with an HTML body).
//   - TruncateRate: bodies cut in half under correct-looking headers.
//   - Latency, CountDelay: slow responses.
//   - PageSizeCap: a smaller page cap.
//   - TeamsLinksOnly: users' teams relationship sent with links only.
//   - StringIDs: ids as numeric strings.
//   - OutOfOrder: rows shuffled within each page.
//   - LateVisibility: changes reach filtered or sorted queries late.
//   - OffsetPagination: links.next with page[offset], which skips rows
//     under concurrent updates.
//   - SchemaDrift: unknown attributes (languagePreference, onboardedAt).
//   - WrongTypeRate: a fraction of users with one wrong-typed member.
//   - HashShapedEmailEvery: every Nth user's email is 64 lower-case hex
//     digits, shaped like a stored hash.
//   - DenyWrite: meta.canWrite false.
//   - Churn: mutate every K requests (update, create, delete).
//   - Options.IdenticalTimestamps: hundreds of users sharing one updatedAt
//     (at runtime, UpdateUsers(n) gives n users one shared updatedAt).
//
// # Ground truth, mutations and counters
//
// Tests read what the simulator holds with User, Users, AllUsers, UserIDs,
// Resource(type, id), Resources(type) and Memberships (attributes as Go
// values plus the raw JSON), change it with UpdateUsers, CreateUsers,
// DeleteUser, and per catalog type Delete, Restore, Update and Rename, and
// read what was served with Stats. Everything is safe for concurrent use.
// Deletes and restores leave updatedAt alone (theirs and their users'), so
// only a full reconcile notices them.
//
// # Performance
//
// Responses are encoded by hand into pooled append buffers, users sorted by
// id or updatedAt are found through the id space or a sorted (updatedAt, id)
// index with binary search, and pages of 1000 users are rendered in parallel
// chunks. BenchmarkServeUsersPages measures pages/s and users/s through a
// real httptest server:
//
//	go test -run='^$' -bench=ServeUsersPages -benchtime=3x ./sync/apisim/
package apisim

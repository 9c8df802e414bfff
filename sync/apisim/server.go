package apisim

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Server. The zero value serves 1000 users to any
// bearer token with every knob off.
type Options struct {
	// Seed makes the dataset, the fault draws and the issued tokens
	// reproducible: the same Seed, Users and clock give the same bytes.
	Seed int64
	// Users is the number of users at start (0 means 1000). A million users
	// cost about 70 MB.
	Users int
	// Teams, Roles and Profiles are the numbers of each (0 means
	// max(3, Users/25), 12 and 6).
	Teams, Roles, Profiles int
	// IdenticalTimestamps gives that many users (spread over the id space)
	// one shared updatedAt an hour before start, so a sort by updatedAt meets
	// long runs of ties spanning several pages.
	IdenticalTimestamps int

	// Now is the clock (default time.Now). The dataset is anchored at the
	// time New reads it: the newest update is two minutes older.
	Now func() time.Time
	// Logger receives debug logs of injected faults and mutations (default:
	// discarded).
	Logger *slog.Logger
	// BaseURL ("https://api.example.com") overrides the scheme and host of
	// the links the simulator sends; by default they follow the request.
	BaseURL string

	// Token, when set, is a static bearer token that is always accepted.
	// With neither Token nor RefreshToken set any non-empty bearer token is.
	Token string
	// RefreshToken turns on OAuth: POST /oauth/token exchanges it (with
	// ClientID and ClientSecret, when set) for an access token and a new
	// refresh token, and API requests then need an issued, unexpired access
	// token (or Token).
	RefreshToken string
	// ClientID and ClientSecret are the OAuth client's credentials. A
	// ClientID alone also turns on OAuth: the first refresh token then comes
	// from the authorization-code flow (GET /oauth/authorize, then the
	// authorization_code grant).
	ClientID, ClientSecret string
	// TokenTTL is the lifetime of issued access tokens (expires_in); 0 means
	// two hours, as the real service.
	TokenTTL time.Duration

	// Revoked starts with the grant revoked (see RevokeTokens): every token
	// is refused until an authorization code is exchanged.
	Revoked bool
	// RevokeAfter, when positive, revokes the grant once RevokeAfter API
	// requests were counted: the next one and those after it get 401.
	RevokeAfter int

	// FailNext fails the first FailNext API requests with FailNextStatus
	// (0 means 503); see Server.FailNext.
	FailNext, FailNextStatus int

	// Knobs are the adjustable behaviours, all off by default.
	Knobs
}

// Validate reports every invalid option, naming each.
func (o Options) Validate() error {
	var errs []error
	if o.Users < 0 || o.Teams < 0 || o.IdenticalTimestamps < 0 || o.FailNext < 0 || o.TokenTTL < 0 || o.RevokeAfter < 0 {
		errs = append(errs, errors.New("Users, Teams, IdenticalTimestamps, FailNext, TokenTTL and RevokeAfter must not be negative"))
	}
	if o.Users > 100_000_000 {
		errs = append(errs, errors.New("Users must be at most 100,000,000"))
	}
	if o.Roles < 0 || o.Roles > 65535 || o.Profiles < 0 || o.Profiles > 65535 {
		errs = append(errs, errors.New("options Roles and Profiles must be between 0 and 65535"))
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, errors.New("BaseURL must be an absolute URL such as https://api.example.com"))
		}
	}
	if err := o.Knobs.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

var _ http.Handler = (*Server)(nil)

// Server simulates the API. It is an http.Handler, and its methods read and
// change the dataset, the knobs and the counters; all are safe for
// concurrent use.
type Server struct {
	opts      Options
	prefix    string // the account's path in a Fleet ("/accounts/<name>"), or ""
	now       func() time.Time
	log       *slog.Logger
	anchor    int64 // Unix ms the dataset is generated around
	pools     *pools
	userAttrs []userAttr
	ix        attrIdx
	types     []*typeDef

	mu          sync.RWMutex // guards data, mutRNG and churnRounds
	data        dataset
	mutRNG      rng
	churnRounds int

	knobMu sync.Mutex // serialises knob writers
	knobs  atomic.Pointer[Knobs]

	faultMu        sync.Mutex // guards the fields below
	faultRNG       rng
	failNext       int
	failNextStatus int
	apiRequests    int64
	rateStart      int64
	rateUsed       int

	auth  authState
	stats statsState
	bufs  *sync.Pool // response buffers, shared by a Fleet's accounts
}

// New builds a simulator. It panics if opts is invalid: call
// Options.Validate first to report configuration errors.
func New(opts Options) *Server {
	if err := opts.Validate(); err != nil {
		panic("apisim: invalid options: " + err.Error())
	}
	return newServer(opts, nil, "")
}

// newServer builds a simulator on a Fleet's shared catalog (nil: its own)
// serving under prefix (stripped before ServeHTTP sees the request).
func newServer(opts Options, c *catalog, prefix string) *Server {
	opts = opts.withDefaults()
	s := &Server{opts: opts, prefix: prefix, now: opts.Now, log: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.anchor = s.now().UnixMilli()
	if c == nil {
		// Its own, built on itself: TestFleetDeterministic compares a fleet's
		// account with such a Server to catch a generator reading more than
		// the catalog.
		s.pools, s.bufs = newPools(225, 1024), &sync.Pool{}
		s.buildUserAttrs()
	} else {
		s.pools, s.userAttrs, s.ix, s.bufs = c.pools, c.userAttrs, c.ix, c.bufs
	}
	s.buildTypes()
	s.buildDataset(&opts)
	s.mutRNG = s.seeded(saltMutation)
	s.faultRNG = s.seeded(saltFaults)
	s.auth.init(s.seeded(saltTokens), opts.RefreshToken)
	if opts.Revoked {
		s.RevokeTokens()
	}
	s.failNext, s.failNextStatus = opts.FailNext, opts.FailNextStatus
	if s.failNextStatus == 0 {
		s.failNextStatus = 503
	}
	k := opts.Knobs
	k.FaultStatuses = append([]int(nil), k.FaultStatuses...)
	s.knobs.Store(&k)
	s.stats.reset()
	return s
}

// count returns how many resources of a dimension the dataset holds; a
// dimension without an option of its own gets a handful.
func (o Options) count(kind resKind) int {
	switch kind {
	case kindTeam:
		return o.Teams
	case kindRole:
		return o.Roles
	case kindProfile:
		return o.Profiles
	}
	return 6
}

// withDefaults fills the options whose zero value means a default.
func (o Options) withDefaults() Options {
	if o.Users == 0 {
		o.Users = 1000
	}
	if o.Teams == 0 {
		o.Teams = max(3, o.Users/25)
	}
	if o.Roles == 0 {
		o.Roles = 12
	}
	if o.Profiles == 0 {
		o.Profiles = 6
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 2 * time.Hour
	}
	return o
}

func (s *Server) nowMs() int64 { return s.now().UnixMilli() }

// route is what a request addresses.
type route struct {
	endpoint string // for the counters: "GET /api/v2/users/{id}"
	t        *typeDef
	id       string // single resource, or ""
	token    bool   // POST /oauth/token
	authz    bool   // GET /oauth/authorize
}

func (s *Server) route(r *http.Request) (route, bool) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == "/oauth/token" {
		return route{endpoint: r.Method + " /oauth/token", token: true}, true
	}
	if path == "/oauth/authorize" {
		return route{endpoint: r.Method + " /oauth/authorize", authz: true}, true
	}
	rest, ok := strings.CutPrefix(path, "/api/v2/")
	if !ok {
		return route{endpoint: "other"}, false
	}
	coll, id, single := strings.Cut(rest, "/")
	t := s.typeByPath(coll)
	if t == nil || single && (id == "" || strings.Contains(id, "/")) {
		return route{endpoint: "other"}, false
	}
	rt := route{endpoint: r.Method + " /api/v2/" + t.path, t: t, id: id}
	if single {
		rt.endpoint += "/{id}"
	}
	return rt, true
}

// ServeHTTP serves one request: routing, then (for the API) churn,
// latency, authentication, rate limits, injected faults, and the response.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.route(r)
	if !ok {
		s.writeError(w, rt.endpoint, nil, &apiError{status: 404, id: "resourceNotFound", title: "Not Found",
			detail: "No route matches " + r.Method + " " + r.URL.Path})
		return
	}
	if rt.token {
		s.serveToken(w, r, rt.endpoint)
		return
	}
	if rt.authz {
		s.serveAuthorize(w, r, rt.endpoint)
		return
	}
	k := s.knobs.Load()
	seq := s.tick(k)
	if s.opts.RevokeAfter > 0 && seq == int64(s.opts.RevokeAfter)+1 {
		s.RevokeTokens()
		s.log.Debug("apisim revoked the grant", "after_requests", s.opts.RevokeAfter)
	}
	if err := sleepCtx(r.Context(), k.Latency); err != nil {
		return // the client went away
	}
	if aerr := s.authenticate(r); aerr != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api", error="invalid_token"`)
		s.writeError(w, rt.endpoint, nil, aerr)
		return
	}
	hdr := make(http.Header)
	if aerr := s.limit(k, seq, hdr); aerr != nil {
		s.writeError(w, rt.endpoint, hdr, aerr)
		return
	}
	if status := s.fault(k, seq); status != 0 {
		s.writeFault(w, rt.endpoint, hdr, status)
		return
	}
	if r.Method != http.MethodGet {
		s.writeError(w, rt.endpoint, hdr, methodError(r))
		return
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	body, n, aerr := s.serveGET(r, rt, k, (*bp)[:0])
	*bp = body
	if aerr != nil {
		s.writeError(w, rt.endpoint, hdr, aerr)
		return
	}
	s.stats.served(rt.t.name, n)
	s.write(w, rt.endpoint, hdr, http.StatusOK, "application/vnd.api+json", body, s.truncate(k))
}

// serveGET renders a collection or a single resource into dst. It returns
// the body and the number of primary resources.
func (s *Server) serveGET(r *http.Request, rt route, k *Knobs, dst []byte) ([]byte, int, *apiError) {
	if rt.id == "" {
		return s.serveCollection(r, rt.t, k, dst)
	}
	notFound := &apiError{status: 404, id: "resourceNotFound", title: "Not Found",
		detail: "Could not find '" + rt.t.name + "' with ID '" + rt.id + "'."}
	id, err := strconv.ParseUint(rt.id, 10, 32)
	if err != nil {
		return dst, 0, notFound
	}
	q, aerr := s.parseQuery(rt.t, r.URL.Query(), k, false)
	if aerr != nil {
		return dst, 0, aerr
	}
	rc := s.newRenderCtx(r, k, q)
	s.mu.RLock()
	defer s.mu.RUnlock()
	dst = append(dst, `{"data":`...)
	dst, ok := rc.appendResource(dst, rt.t.kind, uint32(id))
	if !ok {
		return dst, 0, notFound
	}
	dst = rc.appendIncluded(dst)
	return append(dst, '}'), 1, nil
}

func (s *Server) newRenderCtx(r *http.Request, k *Knobs, q *query) *renderCtx {
	rc := &renderCtx{s: s, k: k, q: q, base: s.baseURL(r)}
	if len(q.include) > 0 {
		rc.included = &includeSet{seen: map[uint64]bool{}}
	}
	return rc
}

// serveCollection renders one page of a collection (spec §4.2–4.3).
func (s *Server) serveCollection(r *http.Request, t *typeDef, k *Knobs, dst []byte) ([]byte, int, *apiError) {
	q, aerr := s.parseQuery(t, r.URL.Query(), k, true)
	if aerr != nil {
		return dst, 0, aerr
	}
	if q.after != nil {
		if _, ok := q.afterKeys(); !ok {
			return dst, 0, badParam("page[after]", "pageParameter.invalid", "page[after] is not a valid cursor")
		}
	}
	if k.OffsetPagination && q.after == nil {
		q.offsetMode = true
	}
	if q.count == countAbsent {
		if err := sleepCtx(r.Context(), k.countDelay()); err != nil {
			return dst, 0, &apiError{status: 499, id: "clientClosedRequest", title: "Client Closed Request"}
		}
	}
	rc := s.newRenderCtx(r, k, q)
	now := s.nowMs()
	s.mu.RLock()
	defer s.mu.RUnlock()
	res := s.newSelector(q, k, now).selectPage(q.count != countFalse)
	ids := res.ids
	if k.OutOfOrder && len(ids) > 1 {
		ids = s.shuffled(ids)
	}
	dst = append(dst, `{"data":[`...)
	dst = s.appendPrimaries(dst, rc, t.kind, ids)
	dst = append(dst, ']')
	dst = rc.appendIncluded(dst)
	if len(ids) > 0 {
		dst = append(dst, `,"links":{"first":`...)
		dst = appendString(dst, pageLink(rc.base, r.URL.Path, r.URL.RawQuery, ""))
		if res.hasNext {
			next := afterParam(encodeToken(q, res.lastKeys, res.ids[len(res.ids)-1]))
			if q.offsetMode {
				next = offsetParam(q.offset + q.size)
			}
			dst = append(dst, `,"next":`...)
			dst = appendString(dst, pageLink(rc.base, r.URL.Path, r.URL.RawQuery, next))
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"meta":{"count":`...)
	if res.count < 0 {
		dst = append(dst, "null"...)
	} else {
		dst = appendInt(dst, int64(min(res.count, k.countCap())))
		dst = append(dst, `,"count_truncated":`...)
		dst = appendBool(dst, res.count > k.countCap())
	}
	return append(dst, "}}"...), len(ids), nil
}

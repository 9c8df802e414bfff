package apisim

import (
	"strconv"

	"github.com/usersync/usersync/schema"
)

// Every generated value is a pure function of (seed, id, version, attribute):
// each attribute draws from its own splitmix64 stream, so rendering a sparse
// fieldset, or adding an attribute, never shifts another attribute's value.

// userCtx is what generating one user needs: its id, a copy of its state
// and its base hash.
type userCtx struct {
	id   uint32
	st   userState
	base uint64
	// first and last cache the name draws (index+1; 0 = not drawn yet):
	// email, username and name all derive from them.
	first, last int
}

func (s *Server) userCtx(id uint32, st *userState) userCtx {
	return userCtx{id: id, st: *st, base: mix(uint64(s.opts.Seed)*golden ^ uint64(id)*0xA24BAED4963EE407 ^ saltUser)}
}

// userAttr generates one user attribute.
type userAttr struct {
	name    string
	typ     schema.JSONType
	key     string  // `,"name":` (the comma is skipped for the first attribute)
	keyNull string  // `,"name":null`
	nullP   float64 // probability of null
	nullThr uint64  // nullP as a bound on a uint64 draw
	stable  bool    // the value never changes with the version
	shift   uint32  // otherwise it changes every 1<<shift versions
	pTrue   float64 // booleans: probability of true
	true32  uint32  // pTrue as a bound on a uint32 draw
	drift   bool    // emitted only with the SchemaDrift knob
	pool    []text  // strings drawn from a pool
	choices []string
	gen     func(dst []byte, u *userCtx, r *rng) []byte
}

// attrIdx holds the positions of the attributes the simulator reads back
// for filters, sorting and cross-attribute rules.
type attrIdx struct {
	firstName, lastName, email, username, locked, current int
	scimExternalID, accountsView, custom1, duties         int
}

// attrHash returns attribute i's hash for u: its value is null when the
// hash is below the attribute's nullThr. An attribute with shift k takes a
// new value every 2^k versions, at a phase that varies by user, so each
// update changes some attributes, not all.
func (s *Server) attrHash(u *userCtx, i int) uint64 {
	a := &s.userAttrs[i]
	var ev uint64
	if !a.stable {
		phase := (u.id*7 + uint32(i)) & (1<<a.shift - 1)
		ev = uint64((u.st.version + phase) >> a.shift)
	}
	return mix(u.base ^ uint64(i+1)*0xD1B54A32D192ED03 ^ ev*0x8CB92BA72F3D8DD7)
}

// attrRNG returns attribute i's stream for u and whether it is null.
func (s *Server) attrRNG(u *userCtx, i int) (rng, bool) {
	h := s.attrHash(u, i)
	return rng{s: h}, h < s.userAttrs[i].nullThr
}

func (s *Server) firstName(u *userCtx) text {
	if u.first == 0 {
		r, _ := s.attrRNG(u, s.ix.firstName)
		u.first = 1 + r.intn(len(s.pools.firstNames))
	}
	return s.pools.firstNames[u.first-1]
}

func (s *Server) lastName(u *userCtx) text {
	if u.last == 0 {
		r, _ := s.attrRNG(u, s.ix.lastName)
		u.last = 1 + r.intn(len(s.pools.lastNames))
	}
	return s.pools.lastNames[u.last-1]
}

// appendEmail appends the (ASCII, escape-free) email of u.
func (s *Server) appendEmail(dst []byte, u *userCtx) []byte {
	r, _ := s.attrRNG(u, s.ix.email)
	dst = append(dst, s.firstName(u).slug...)
	dst = append(dst, '.')
	dst = append(dst, s.lastName(u).slug...)
	dst = strconv.AppendUint(dst, uint64(u.id), 10)
	dst = append(dst, '@')
	return append(dst, s.pools.domains[r.intn(len(s.pools.domains))].esc...)
}

// appendUsername appends the (ASCII) username of u, unique by id.
func (s *Server) appendUsername(dst []byte, u *userCtx) []byte {
	dst = append(dst, s.firstName(u).slug[0])
	dst = append(dst, s.lastName(u).slug...)
	return strconv.AppendUint(dst, uint64(u.id), 10)
}

func (s *Server) locked(u *userCtx) bool {
	a := &s.userAttrs[s.ix.locked]
	return a.choose(s.attrHash(u, s.ix.locked)) == 1
}

// currentSignIn returns currentSignInAt, false when null.
func (s *Server) currentSignIn(u *userCtx) (int64, bool) {
	r, null := s.attrRNG(u, s.ix.current)
	if null {
		return 0, false
	}
	span := max(u.st.updatedAt-u.st.createdAt, 1)
	return u.st.createdAt + r.int63n(span), true
}

func (s *Server) isNull(u *userCtx, i int) bool {
	_, null := s.attrRNG(u, i)
	return null
}

// buildUserAttrs derives the generator table from the catalog, in catalog
// order, plus the two drift attributes. Attributes the simulator has no
// specific rule for get a generic value of their JSON type, so a catalog
// addition never breaks it.
func (s *Server) buildUserAttrs() {
	attrs := schema.User().Attributes
	attrs = append(attrs,
		schema.Attribute{Name: "languagePreference", Type: schema.String},
		schema.Attribute{Name: "onboardedAt", Type: schema.DateTime})
	s.userAttrs = make([]userAttr, len(attrs))
	for i, a := range attrs {
		h := rng{s: mix(uint64(i) + 77)} // varies null rates per attribute, independent of the seed
		ua := userAttr{name: a.Name, typ: a.Type, key: `,"` + a.Name + `":`, shift: uint32(h.intn(3)),
			nullP: 0.05 + 0.6*h.float(), pTrue: 0.2 + 0.6*h.float()}
		s.genericGen(a, &ua)
		s.customizeAttr(&ua, a)
		ua.drift = i >= len(attrs)-2
		finishAttr(&ua)
		s.userAttrs[i] = ua
	}
	idx := func(name string) int {
		for i, a := range s.userAttrs {
			if a.name == name {
				return i
			}
		}
		panic("apisim: catalog lacks user attribute " + name) // programmer error
	}
	s.ix = attrIdx{
		firstName: idx("firstName"), lastName: idx("lastName"), email: idx("email"), username: idx("username"),
		locked: idx("locked"), current: idx("currentSignInAt"), scimExternalID: idx("scimExternalId"),
		accountsView: idx("accountsViewId"), custom1: idx("custom1"), duties: idx("duties"),
	}
}

func appendText(dst []byte, t text) []byte {
	dst = append(dst, '"')
	dst = append(dst, t.esc...)
	return append(dst, '"')
}

// genericGen sets a generator by JSON type: booleans and strings draw from
// pre-rendered choices (see finishAttr), the others from a function.
func (s *Server) genericGen(a schema.Attribute, ua *userAttr) {
	switch a.Type {
	case schema.Integer:
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte { return appendInt(dst, int64(1+r.intn(5000))) }
	case schema.DateTime:
		ua.gen = func(dst []byte, u *userCtx, r *rng) []byte {
			return appendMillis(dst, u.st.createdAt+r.int63n(max(u.st.updatedAt-u.st.createdAt, 1)))
		}
	case schema.Object:
		ua.gen = func(dst []byte, _ *userCtx, _ *rng) []byte { return append(dst, "{}"...) }
	case schema.String:
		ua.pool = s.pools.customs
		if len(a.Enum) > 0 {
			ua.pool = texts(a.Enum...)
		}
	}
}

// finishAttr pre-renders the whole `,"key":value` fragment of every value
// a boolean or pooled attribute can take: rendering one is then a single
// hash and a single append.
func finishAttr(ua *userAttr) {
	ua.keyNull = ua.key + "null"
	ua.nullThr = threshold(ua.nullP)
	ua.true32 = uint32(threshold(ua.pTrue) >> 32)
	switch {
	case ua.typ == schema.Boolean && ua.gen == nil:
		ua.choices = []string{ua.key + "false", ua.key + "true"}
	case ua.pool != nil && ua.gen == nil:
		for _, t := range ua.pool {
			ua.choices = append(ua.choices, ua.key+`"`+t.esc+`"`)
		}
	}
}

// choose picks the choice of hash h: the low 32 bits decide (the high ones
// decided null).
func (a *userAttr) choose(h uint64) int {
	if a.typ == schema.Boolean {
		return boolInt(uint32(h) < a.true32)
	}
	return int(uint64(uint32(h)) * uint64(len(a.choices)) >> 32)
}

// customizeAttr sets the realistic rule of each known attribute. It is one
// long switch on purpose: every attribute's null rate, stability and value
// rule reads in one place, next to its neighbours.
func (s *Server) customizeAttr(ua *userAttr, a schema.Attribute) {
	p := s.pools
	stable := func(nullP float64) { ua.stable, ua.nullP = true, nullP }
	switch a.Name {
	case "defaultRulesetId":
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte { return appendInt(dst, int64(1+r.intn(40))) }
	case "locked":
		ua.nullP, ua.pTrue, ua.shift = 0, 0.08, 2
	case "bridgePhone", "inboundBridgePhone", "phoneNumber":
		ua.gen = genPhone
	case "bridgePhoneExtension", "inboundBridgePhoneExtension":
		ua.nullP = 0.85
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte {
			dst = append(dst, '"')
			dst = appendInt(dst, int64(10+r.intn(99990)))
			return append(dst, '"')
		}
	case "controlledTabDefault":
		ua.pool = p.tabs
	case "custom1", "custom2", "custom3", "custom4", "custom5":
		ua.nullP = 0.5 + 0.09*float64(a.Name[6]-'1')
		ua.pool = append(append([]text(nil), p.customs...), p.maxCustoms...) // about 30% at the maximum length
	case "email":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte {
			return append(s.appendEmail(append(dst, '"'), u), '"')
		}
	case "username":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte {
			return append(s.appendUsername(append(dst, '"'), u), '"')
		}
	case "firstName":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte { return appendText(dst, s.firstName(u)) }
	case "lastName":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte { return appendText(dst, s.lastName(u)) }
	case "name":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte {
			dst = append(dst, '"')
			dst = append(dst, s.firstName(u).esc...)
			dst = append(dst, ' ')
			dst = append(dst, s.lastName(u).esc...)
			return append(dst, '"')
		}
	case "inboundVoicemailCustomMessageText":
		ua.nullP = 0.75
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte {
			if r.chance(0.25) {
				return appendText(dst, p.maxVoicemails[r.intn(len(p.maxVoicemails))])
			}
			return appendText(dst, p.voicemails[r.intn(len(p.voicemails))])
		}
	case "jobRoleByName":
		ua.pool = p.jobRoles
	case "oceMailTrackingState":
		ua.pool = p.tracking
	case "phoneCountryCode":
		ua.pool = p.countryCodes
	case "preferredVoiceRegion":
		ua.pool = p.regions
	case "primaryTimezone":
		ua.nullP, ua.pool = 0.08, p.timezones
	case "secondaryTimezone":
		ua.nullP, ua.pool = 0.7, p.timezones
	case "tertiaryTimezone":
		ua.nullP, ua.pool = 0.9, p.timezones
	case "scimExternalId":
		ua.nullP, ua.stable = 0.6, true
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte {
			return append(appendUUID(append(dst, '"'), r.next(), r.next()), '"')
		}
	case "scimSource":
		ua.stable = true
		ua.gen = func(dst []byte, u *userCtx, r *rng) []byte {
			if s.isNull(u, s.ix.scimExternalID) {
				return append(dst, "null"...)
			}
			return appendText(dst, p.scimSources[r.intn(len(p.scimSources))])
		}
	case "title":
		ua.nullP, ua.pool = 0.15, p.titles
	case "userGuid":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte {
			return append(appendUUID(append(dst, '"'), u.base, mix(u.base)), '"')
		}
	case "createdAt":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte { return appendMillis(dst, u.st.createdAt) }
	case "updatedAt":
		stable(0)
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte { return appendMillis(dst, u.st.updatedAt) }
	case "currentSignInAt":
		ua.nullP = 0.2
		ua.gen = func(dst []byte, u *userCtx, _ *rng) []byte {
			ms, _ := s.currentSignIn(u)
			return appendMillis(dst, ms)
		}
	case "lastSignInAt":
		ua.nullP = 0.1
		ua.gen = func(dst []byte, u *userCtx, r *rng) []byte {
			cur, ok := s.currentSignIn(u)
			if !ok {
				return append(dst, "null"...)
			}
			return appendMillis(dst, max(u.st.createdAt, cur-r.int63n(30*msPerDay)))
		}
	case "passwordExpiresAt":
		ua.nullP = 0.6
		ua.gen = func(dst []byte, u *userCtx, r *rng) []byte {
			return appendMillis(dst, u.st.updatedAt+30*msPerDay+r.int63n(150*msPerDay))
		}
	case "duties":
		ua.nullP = 0.3
		ua.gen = func(dst []byte, _ *userCtx, r *rng) []byte {
			dst = append(dst, `{"duties":[`...)
			for i, n := 0, r.intn(4); i < n; i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				d := r.intn(len(p.duties))
				dst = append(dst, `{"id":`...)
				dst = appendInt(dst, int64(d+1))
				dst = append(dst, `,"name":`...)
				dst = appendText(dst, p.duties[d])
				dst = append(dst, '}')
			}
			return append(dst, "]}"...)
		}
	case "languagePreference":
		ua.nullP, ua.pool = 0.3, p.languages
	case "onboardedAt":
		ua.nullP, ua.stable = 0.4, true
		ua.gen = func(dst []byte, u *userCtx, r *rng) []byte {
			return appendMillis(dst, u.st.createdAt+r.int63n(14*msPerDay))
		}
	}
}

func genPhone(dst []byte, _ *userCtx, r *rng) []byte {
	dst = append(dst, '"', '+')
	dst = appendInt(dst, int64(1+r.intn(98)))
	dst = append(dst, ' ')
	dst = appendDigits(dst, int64(200+r.intn(800)), 3)
	dst = append(dst, '-')
	dst = appendDigits(dst, int64(r.intn(1000)), 3)
	dst = append(dst, '-')
	dst = appendDigits(dst, int64(r.intn(10000)), 4)
	return append(dst, '"')
}

// appendUUID appends a version-4-shaped UUID made of a and b.
func appendUUID(dst []byte, a, b uint64) []byte {
	var raw [16]byte
	for i := range 8 {
		raw[i] = byte(a >> (8 * i))
		raw[8+i] = byte(b >> (8 * i))
	}
	raw[6] = raw[6]&0x0f | 0x40
	raw[8] = raw[8]&0x3f | 0x80
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xF])
	}
	return dst
}

// visibleAt is when a user's current version shows up in filtered or sorted
// collection queries under the LateVisibility knob.
func (s *Server) visibleAt(id uint32, st *userState, lagMs int64) int64 {
	r := s.seeded(saltVisible, uint64(id), uint64(st.version))
	return st.updatedAt + r.int63n(lagMs)
}

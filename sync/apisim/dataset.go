package apisim

import (
	"cmp"
	"slices"
	"strconv"
)

// The dataset keeps only small per-resource state. A user's attributes are
// never stored: they are generated on demand from (seed, id, version), so a
// million users cost about 48 bytes each plus 16 bytes of index.

const (
	maxTeamsPerUser = 4
	msPerDay        = 86_400_000
	datasetSpan     = 4 * 365 * msPerDay // createdAt spreads over four years
	freshness       = 2 * 60_000         // the newest update is this old at New
)

// userState is everything the simulator stores about one user.
type userState struct {
	createdAt int64 // Unix ms
	updatedAt int64 // Unix ms
	version   uint32
	role      uint16 // 0 = no role
	profile   uint16 // 0 = no profile
	teams     [maxTeamsPerUser]uint32
	nTeams    uint8
	deleted   bool
}

// idxEntry is one row of the updatedAt index. An entry is stale when its
// user's updatedAt has moved on; stale entries are skipped and compacted
// away in bulk, so an update costs an append, not a memmove of the index.
type idxEntry struct {
	ts int64
	id uint32
}

func cmpEntry(a, b idxEntry) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// smallRec is a team, role or profile. There are few of them, so their
// attribute values are stored, pre-encoded, in the order of the type's
// schema attributes (createdAt and updatedAt come from the fields).
type smallRec struct {
	id        uint32
	version   uint32
	createdAt int64
	updatedAt int64
	deleted   bool
	name      string
	special   string // profiles: specialId, "" = null
	parent    uint32 // roles: parentRole, 0 = null
	vals      [][]byte
}

// dataset is the mutable state behind Server.mu.
type dataset struct {
	users  []userState  // user id i lives at users[i-1]
	index  []idxEntry   // sorted by (ts, id)
	stale  int          // stale entries in index
	smalls [][]smallRec // by kind, one list per dimension: team id i at smalls[kindTeam][i-1]
}

func (d *dataset) user(id uint32) *userState {
	if id == 0 || int(id) > len(d.users) {
		return nil
	}
	return &d.users[id-1]
}

func (d *dataset) small(kind resKind) []smallRec {
	if kind <= kindUser || int(kind) >= len(d.smalls) {
		return nil
	}
	return d.smalls[kind]
}

func (d *dataset) smallRec(kind resKind, id uint32) *smallRec {
	recs := d.small(kind)
	if id == 0 || int(id) > len(recs) {
		return nil
	}
	return &recs[id-1]
}

func (d *dataset) liveSmall(kind resKind, id uint32) bool {
	r := d.smallRec(kind, id)
	return r != nil && !r.deleted
}

// indexInsert adds (ts, id) at its sorted place; updates move users to the
// newest end, so this is almost always an append.
func (d *dataset) indexInsert(ts int64, id uint32) {
	e := idxEntry{ts, id}
	n := len(d.index)
	if n == 0 || cmpEntry(d.index[n-1], e) < 0 {
		d.index = append(d.index, e)
		return
	}
	i, _ := slices.BinarySearchFunc(d.index, e, cmpEntry)
	d.index = slices.Insert(d.index, i, e)
}

// setUpdatedAt moves a user in the index.
func (d *dataset) setUpdatedAt(id uint32, ts int64) {
	st := d.user(id)
	if st.updatedAt == ts {
		return
	}
	st.updatedAt = ts
	d.indexInsert(ts, id)
	d.stale++
	if d.stale > 1024 && d.stale > len(d.index)/4 {
		d.compact()
	}
}

func (d *dataset) compact() {
	out := d.index[:0]
	for _, e := range d.index {
		if d.users[e.id-1].updatedAt == e.ts {
			out = append(out, e)
		}
	}
	clear(d.index[len(out):])
	d.index = out
	d.stale = 0
}

// buildDataset generates the initial dataset deterministically.
func (s *Server) buildDataset(o *Options) {
	d := &s.data
	d.smalls = make([][]smallRec, len(s.types))
	for _, t := range s.types[kindUser+1:] {
		recs := make([]smallRec, o.count(t.kind))
		for i := range recs {
			recs[i] = s.newSmall(t.kind, uint32(i+1))
		}
		d.smalls[t.kind] = recs
	}
	d.users = make([]userState, o.Users)
	d.index = make([]idxEntry, o.Users)
	for i := range d.users {
		id := uint32(i + 1)
		r := s.seeded(saltCreated, uint64(id))
		created := s.anchor - freshness - datasetSpan + int64(r.intn(datasetSpan))
		// Updates cluster towards the present: a cube of a uniform draw.
		f := r.float()
		age := int64(float64(s.anchor-freshness-created-1000) * f * f * f)
		d.users[i] = s.newUserState(id, created, s.anchor-freshness-age)
	}
	if n := o.IdenticalTimestamps; n > 0 {
		shared := s.anchor - 3_600_000 // one bulk change an hour before New
		step := max(1, len(d.users)/n)
		for i := 0; i < len(d.users) && n > 0; i, n = i+step, n-1 {
			u := &d.users[i]
			u.updatedAt = shared
			u.createdAt = min(u.createdAt, shared-msPerDay)
		}
	}
	for i := range d.users {
		d.index[i] = idxEntry{d.users[i].updatedAt, uint32(i + 1)}
	}
	slices.SortFunc(d.index, cmpEntry)

}

// newUserState draws a user's role, profile and teams from (seed, id).
func (s *Server) newUserState(id uint32, created, updated int64) userState {
	st := userState{createdAt: created, updatedAt: max(updated, created+1000)}
	s.drawMemberships(&st, s.seeded(saltMembership, uint64(id)))
	return st
}

// drawMemberships sets role, profile and teams from r.
func (s *Server) drawMemberships(st *userState, r rng) {
	roles, profiles, teams := len(s.data.small(kindRole)), len(s.data.small(kindProfile)), len(s.data.small(kindTeam))
	st.role = 0
	if !r.chance(0.04) && roles > 0 {
		st.role = uint16(1 + r.intn(roles))
	}
	switch p := r.float(); {
	case profiles == 0 || p < 0.02:
		st.profile = 0
	case p < 0.05:
		st.profile = 1 // admin
	case p < 0.75 || profiles < 3:
		st.profile = uint16(min(2, profiles))
	default:
		st.profile = uint16(3 + r.intn(profiles-2))
	}
	var n int
	switch p := r.float(); {
	case p < 0.10:
		n = 0
	case p < 0.60:
		n = 1
	case p < 0.85:
		n = 2
	case p < 0.95:
		n = 3
	default:
		n = 4
	}
	n = min(n, teams)
	st.nTeams = 0
	for st.nTeams < uint8(n) {
		t := uint32(1 + r.intn(teams))
		if !slices.Contains(st.teams[:st.nTeams], t) {
			st.teams[st.nTeams] = t
			st.nTeams++
		}
	}
	clear(st.teams[st.nTeams:])
}

// newSmall generates a team, role or profile at version 0.
func (s *Server) newSmall(kind resKind, id uint32) smallRec {
	r := s.seeded(saltSmall+uint64(kind), uint64(id))
	created := s.anchor - 5*365*msPerDay + int64(r.intn(365*msPerDay))
	rec := smallRec{id: id, createdAt: created}
	rec.updatedAt = created + int64(r.float()*float64(s.anchor-freshness-created))
	switch kind {
	case kindTeam:
		rec.name = suffixed(s.pools.teamNames[(id-1)%uint32(len(s.pools.teamNames))].raw, id, len(s.pools.teamNames))
	case kindRole:
		rec.name = suffixed(s.pools.roleNames[(id-1)%uint32(len(s.pools.roleNames))].raw, id, len(s.pools.roleNames))
		if id > 1 && !r.chance(0.15) {
			rec.parent = uint32(1 + r.intn(int(id-1)))
		}
	case kindProfile:
		rec.name = suffixed(s.pools.profileNames[(id-1)%uint32(len(s.pools.profileNames))], id, len(s.pools.profileNames))
		switch id {
		case 1:
			rec.special = "admin"
		case 2:
			rec.special = "default"
		}
	default: // a dimension without a generator of its own: "mailbox 3"
		rec.name = s.types[kind].name + " " + strconv.FormatUint(uint64(id), 10)
	}
	s.encodeSmall(kind, &rec)
	return rec
}

// suffixed makes pooled names unique once the pool is exhausted.
func suffixed(name string, id uint32, poolSize int) string {
	if int(id) <= poolSize {
		return name
	}
	return name + " " + strconv.FormatUint(uint64(id), 10)
}

// encodeSmall (re)computes a small resource's stored attribute values from
// (seed, kind, id, version).
func (s *Server) encodeSmall(kind resKind, rec *smallRec) {
	t := s.types[kind]
	r := s.seeded(saltSmall+16*uint64(rec.version+1)+uint64(kind), uint64(rec.id))
	rec.vals = make([][]byte, len(t.attrs))
	for i, name := range t.attrs {
		var v []byte
		switch name {
		case "name":
			v = appendString(nil, rec.name)
		case "color":
			v = appendString(nil, s.pools.colors[r.intn(len(s.pools.colors))].raw)
		case "scimExternalId":
			if r.chance(0.3) {
				v = appendUUID(append(v, '"'), r.next(), r.next())
				v = append(v, '"')
			}
		case "scimSource":
			if rec.vals[i-1] != nil {
				v = appendString(nil, s.pools.scimSources[r.intn(len(s.pools.scimSources))].raw)
			}
		case "specialId":
			if rec.special != "" {
				v = appendString(nil, rec.special)
			}
		case "isAdmin":
			v = appendBool(nil, rec.special == "admin")
		case "createdAt", "updatedAt":
			continue // rendered from the record's fields
		}
		if v == nil {
			v = []byte("null")
		}
		rec.vals[i] = v
	}
}

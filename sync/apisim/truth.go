package apisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/usersync/usersync/schema"
)

// Resource is one resource as the simulator holds it: the ground truth a
// test compares a warehouse with.
type Resource struct {
	Type string // "user", "team", "role" or "profile"
	ID   int64
	// Attributes maps every attribute sent (the SchemaDrift knob's
	// included) to its value as the wire carries it: nil for null, bool,
	// int64, string, time.Time (UTC, millisecond precision) for datetime
	// attributes, json.RawMessage for objects (duties). A wrong-typed value
	// (WrongTypeRate) keeps its wire type: locked "yes" is a string.
	Attributes map[string]any
	// Relationships maps every relationship to the related ids: none or one
	// for a to-one relationship (none means null), the ids in order for a
	// to-many one. Deleted teams, roles and profiles are left out, as in
	// responses. These are the true ids even when the role id is sent
	// wrong-typed.
	Relationships map[string][]int64
	// DataConnections is meta.dataConnections (users only).
	DataConnections json.RawMessage
	// WrongType names the member sent with a wrong type under the
	// WrongTypeRate knob ("locked", "relationships.role"...), or "".
	WrongType string
	// Raw is the resource object as GET /{type}/{id} sends it with every
	// knob of presentation off: ids as numbers, relationships with data, no
	// links and no meta.
	Raw json.RawMessage
}

// Membership is one user's membership of a team.
type Membership struct {
	UserID, TeamID int64
}

// User returns the user id; false if it does not exist or is deleted.
func (s *Server) User(id int64) (Resource, bool) { return s.resource(kindUser, id) }

// Resource returns the resource of catalog type typ ("user", "team", "role",
// "profile") and id; false if it does not exist, is deleted or typ is unknown.
func (s *Server) Resource(typ string, id int64) (Resource, bool) {
	kind := kindOfType(typ)
	if kind == kindNone {
		return Resource{}, false
	}
	return s.resource(kind, id)
}

// Users returns every live user in id order. It builds one map per user:
// for large datasets prefer AllUsers or UserIDs.
func (s *Server) Users() []Resource { return slices.Collect(s.AllUsers()) }

// AllUsers iterates over the live users in id order, rendering one at a
// time. Users deleted during the iteration are skipped.
func (s *Server) AllUsers() iter.Seq[Resource] {
	return func(yield func(Resource) bool) {
		for _, id := range s.UserIDs() {
			if r, ok := s.User(id); ok && !yield(r) {
				return
			}
		}
	}
}

// UserIDs returns the ids of the live users, ascending.
func (s *Server) UserIDs() []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]int64, 0, len(s.data.users))
	for i := range s.data.users {
		if !s.data.users[i].deleted {
			ids = append(ids, int64(i+1))
		}
	}
	return ids
}

// Resources returns the live resources of catalog type typ in id order
// (users as Users does); nil for an unknown type.
func (s *Server) Resources(typ string) []Resource {
	switch kind := kindOfType(typ); kind {
	case kindNone:
		return nil
	case kindUser:
		return s.Users()
	default:
		return s.smalls(kind)
	}
}

func (s *Server) smalls(kind resKind) []Resource {
	s.mu.RLock()
	n := len(s.data.small(kind))
	s.mu.RUnlock()
	var out []Resource
	for id := 1; id <= n; id++ {
		if r, ok := s.resource(kind, int64(id)); ok {
			out = append(out, r)
		}
	}
	return out
}

// Memberships returns every (user, team) pair of live users and teams,
// ordered by user then by the user's team order.
func (s *Server) Memberships() []Membership {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Membership
	var buf [maxTeamsPerUser]uint32
	for i := range s.data.users {
		st := &s.data.users[i]
		if st.deleted {
			continue
		}
		u := s.userCtx(uint32(i+1), st)
		for _, t := range s.liveTeams(buf[:0], &u, 0) {
			out = append(out, Membership{UserID: int64(i + 1), TeamID: int64(t)})
		}
	}
	return out
}

// resource renders the canonical form of one resource and decodes it.
func (s *Server) resource(kind resKind, id int64) (Resource, bool) {
	if id <= 0 || id > 1<<32-1 {
		return Resource{}, false
	}
	k := s.knobs.Load()
	rc := &renderCtx{s: s, k: k, q: &query{t: s.types[kind]}, canonical: true}
	res := Resource{Type: s.types[kind].name, ID: id, Relationships: map[string][]int64{}}
	s.mu.RLock()
	raw, ok := rc.appendResource(nil, kind, uint32(id))
	if ok {
		s.truthRelationships(&res, kind, uint32(id), k)
	}
	s.mu.RUnlock()
	if !ok {
		return Resource{}, false
	}
	res.Raw = raw
	var doc struct {
		Attributes map[string]json.RawMessage `json:"attributes"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(fmt.Sprintf("apisim: rendered invalid JSON for %s %d: %v", res.Type, id, err)) // programmer error
	}
	res.Attributes = make(map[string]any, len(doc.Attributes))
	for name, v := range doc.Attributes {
		res.Attributes[name] = decodeValue(v, s.isDateTime(kind, name))
	}
	return res, true
}

// truthRelationships fills the relationship ids, the data connections and
// the wrong-type marker; s.mu is held.
func (s *Server) truthRelationships(res *Resource, kind resKind, id uint32, k *Knobs) {
	t := s.types[kind]
	var buf [8]uint32
	if kind != kindUser {
		rec := s.data.smallRec(kind, id)
		for _, rd := range t.rels {
			if rd.rendered {
				res.Relationships[rd.name] = toInt64s(s.smallRelIDs(buf[:0], kind, rec, rd.name))
			}
		}
		return
	}
	u := s.userCtx(id, s.data.user(id))
	for _, rd := range t.rels {
		res.Relationships[rd.name] = toInt64s(rd.gen(buf[:0], &u))
	}
	res.DataConnections = s.appendDataConnections(nil, &u)
	res.WrongType = s.corruption(id, k.WrongTypeRate).member()
}

func toInt64s(ids []uint32) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

func (s *Server) isDateTime(kind resKind, name string) bool {
	if name == "createdAt" || name == "updatedAt" {
		return true
	}
	if kind != kindUser {
		return false
	}
	for i := range s.userAttrs {
		if s.userAttrs[i].name == name {
			return s.userAttrs[i].typ == schema.DateTime
		}
	}
	return false
}

// decodeValue converts one JSON value to the Go form Resource documents.
func decodeValue(v json.RawMessage, dateTime bool) any {
	v = bytes.TrimSpace(v)
	switch v[0] {
	case 'n':
		return nil
	case 't', 'f':
		return v[0] == 't'
	case '{', '[':
		return json.RawMessage(bytes.Clone(v))
	case '"':
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			panic("apisim: rendered an invalid string: " + err.Error()) // programmer error
		}
		if dateTime {
			if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
				return t.UTC()
			}
		}
		return str
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		panic("apisim: rendered an invalid number: " + err.Error()) // programmer error
	}
	if i, err := n.Int64(); err == nil {
		return i
	}
	f, _ := n.Float64()
	return f
}

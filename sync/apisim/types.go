package apisim

import (
	"strings"

	"github.com/usersync/usersync/schema"
)

// resKind is one of the four served resource types.
type resKind int

const (
	kindUser resKind = iota
	kindTeam
	kindRole
	kindProfile
	kindNone resKind = -1
)

// fieldKind is how a filterable or sortable field compares.
type fieldKind int

const (
	fkInt fieldKind = iota
	fkTime
	fkString
	fkBool
)

// fieldDef is a field that filter[...] and sort accept.
type fieldDef struct {
	name   string
	kind   fieldKind
	noSort bool
}

// relDef is a relationship as the simulator serves it.
type relDef struct {
	name       string
	relType    string
	toMany     bool
	filterable bool                                    // filter[<name>][id]
	target     resKind                                 // the served type, or kindNone (include refused)
	rendered   bool                                    // false for filter-only relationships (teams' users)
	key        string                                  // `"name":`
	dataKey    string                                  // `"name":{"data":`
	ident      string                                  // `{"type":"relType","id":`
	gen        func(dst []uint32, u *userCtx) []uint32 // users only
}

// typeDef describes one served resource type.
type typeDef struct {
	kind       resKind
	name       string // JSON:API type, e.g. "user"
	path       string // e.g. "users"
	controller string // the token's "cn", after the real service's tokens
	attrs      []string
	fields     []fieldDef
	rels       []relDef
}

func (t *typeDef) field(name string) *fieldDef {
	for i := range t.fields {
		if t.fields[i].name == name {
			return &t.fields[i]
		}
	}
	return nil
}

func (t *typeDef) rel(name string) *relDef {
	for i := range t.rels {
		if t.rels[i].name == name {
			return &t.rels[i]
		}
	}
	return nil
}

func (t *typeDef) hasAttr(name string) bool {
	for _, a := range t.attrs {
		if a == name {
			return true
		}
	}
	return false
}

// kindOfType returns the kind of a catalog type: kinds number the
// catalog's resources in order, so kindTeam is the first dimension.
func kindOfType(typ string) resKind {
	for i, r := range schema.Resources() {
		if r.Type == typ {
			return resKind(i)
		}
	}
	return kindNone
}

// nthDimension returns the dimension whose turn n is, in a round-robin
// over the catalog's dimensions.
func (s *Server) nthDimension(n int) resKind {
	return resKind(1 + n%(len(s.types)-1))
}

func newRel(r schema.Relationship) relDef {
	return relDef{
		name: r.Name, relType: r.RelatedType, toMany: r.ToMany, filterable: r.Filterable,
		target: kindOfType(r.RelatedType), rendered: true,
		key: `"` + r.Name + `":`, dataKey: `"` + r.Name + `":{"data":`, ident: `{"type":"` + r.RelatedType + `","id":`,
	}
}

func attrNames(res schema.Resource) []string {
	out := make([]string, len(res.Attributes))
	for i, a := range res.Attributes {
		out[i] = a.Name
	}
	return out
}

// buildTypes derives the served types from the catalog.
func (s *Server) buildTypes() {
	common := []fieldDef{{name: "id", kind: fkInt}, {name: "name", kind: fkString},
		{name: "createdAt", kind: fkTime}, {name: "updatedAt", kind: fkTime}}

	user := &typeDef{kind: kindUser, name: "user", path: "users", controller: "ApiV2::UsersController",
		fields: []fieldDef{
			{name: "id", kind: fkInt}, {name: "createdAt", kind: fkTime}, {name: "updatedAt", kind: fkTime},
			{name: "currentSignInAt", kind: fkTime}, {name: "email", kind: fkString},
			{name: "username", kind: fkString}, {name: "firstName", kind: fkString},
			{name: "lastName", kind: fkString}, {name: "locked", kind: fkBool},
		}}
	for _, a := range s.userAttrs {
		user.attrs = append(user.attrs, a.name)
	}
	for _, r := range schema.User().Relationships {
		rd := newRel(r)
		rd.gen = s.userRelGen(r.Name)
		user.rels = append(user.rels, rd)
	}

	s.types = []*typeDef{user}
	for _, res := range schema.Dimensions() {
		s.types = append(s.types, dimensionType(res, common))
	}
}

// dimensionType derives a served dimension from the catalog, with what the
// real API adds to teams (filter[users][id]) and profiles (specialId).
func dimensionType(res schema.Resource, common []fieldDef) *typeDef {
	t := &typeDef{kind: kindOfType(res.Type), name: res.Type, path: res.Path, attrs: attrNames(res), fields: common,
		controller: "ApiV2::" + strings.ToUpper(res.Path[:1]) + res.Path[1:] + "Controller"}
	for _, r := range res.Relationships {
		t.rels = append(t.rels, newRel(r))
	}
	switch t.kind {
	case kindTeam:
		t.rels = append(t.rels, relDef{name: "users", relType: "user", toMany: true, filterable: true, target: kindUser})
	case kindProfile:
		t.fields = append(append([]fieldDef(nil), common...), fieldDef{name: "specialId", kind: fkString, noSort: true})
	}
	return t
}

func (s *Server) typeByPath(path string) *typeDef {
	for _, t := range s.types {
		if t.path == path {
			return t
		}
	}
	return nil
}

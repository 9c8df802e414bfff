package apisim

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// apiError is one JSON:API error object; status is the HTTP status.
type apiError struct {
	status int
	id     string
	title  string
	detail string
	param  string // source.parameter, when a query parameter is at fault
}

func badParam(param, id, detail string) *apiError {
	return &apiError{status: 400, id: id, title: "Invalid Query Parameter", detail: detail, param: param}
}

type countMode int

const (
	countAbsent countMode = iota
	countTrue
	countFalse
)

// key is a comparable field value: null, a bool (as 0/1), an integer or
// Unix milliseconds, or a string. Null sorts first.
type key struct {
	kind fieldKind
	null bool
	n    int64
	s    string
}

func cmpKey(a, b key) int {
	switch {
	case a.null || b.null:
		return boolInt(!a.null) - boolInt(!b.null)
	case a.kind == fkString:
		return strings.Compare(a.s, b.s)
	case a.n < b.n:
		return -1
	case a.n > b.n:
		return 1
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cond is one filter: an attribute test (f set) or a relationship id test
// (rel set). An attribute test is a list of allowed values, or bounds.
type cond struct {
	f      *fieldDef
	rel    *relDef
	ids    []uint32
	vals   []key
	lo, hi *key
	loExcl bool
	hiExcl bool
}

func (c *cond) match(k key) bool {
	if c.vals != nil {
		return slices.ContainsFunc(c.vals, func(v key) bool { return !k.null && cmpKey(k, v) == 0 })
	}
	if k.null {
		return false
	}
	if c.lo != nil {
		if d := cmpKey(k, *c.lo); d < 0 || d == 0 && c.loExcl {
			return false
		}
	}
	if c.hi != nil {
		if d := cmpKey(k, *c.hi); d > 0 || d == 0 && c.hiExcl {
			return false
		}
	}
	return true
}

type sortKey struct {
	f    *fieldDef
	desc bool
}

// mask is a set of small indexes (attributes or relationships).
type mask [2]uint64

func (m *mask) set(i int)     { m[i/64] |= 1 << (i % 64) }
func (m mask) has(i int) bool { return m[i/64]&(1<<(i%64)) != 0 }
func allMask() mask           { return mask{^uint64(0), ^uint64(0)} }

// fieldSel is a sparse fieldset: which attributes and relationships of one
// type to send.
type fieldSel struct {
	attrs mask
	rels  mask
}

// query is a parsed request.
type query struct {
	t          *typeDef
	conds      []cond
	sorts      []sortKey
	sortParam  string // normalised sort parameter, "id" by default
	sortGiven  bool
	size       int
	after      *token
	offset     int
	offsetMode bool
	count      countMode
	include    []*relDef
	fields     [4]fieldSel
	dataConn   bool
	authMeta   bool
}

// filteredOrSorted tells whether the LateVisibility knob applies.
func (q *query) filteredOrSorted() bool { return len(q.conds) > 0 || q.sortGiven }

// parseQuery parses and validates the query string of a request on type t.
// collection is false for GET /{type}/{id}, where only include, fields and
// the meta flags apply. It is one loop over the parameters with a case per
// family, so the accepted parameters read as a table.
func (s *Server) parseQuery(t *typeDef, values url.Values, k *Knobs, collection bool) (*query, *apiError) {
	q := &query{t: t, size: DefaultPageSize, sortParam: "id"}
	for i := range q.fields {
		q.fields[i] = fieldSel{attrs: allMask(), rels: allMask()}
	}
	keys := make([]string, 0, len(values))
	for name := range values {
		keys = append(keys, name)
	}
	slices.Sort(keys) // so that the reported error does not depend on map order
	newSyntax := values.Get("newFilterSyntax") == "true"
	for _, name := range keys {
		v := values[name][0]
		base, segs := splitParam(name)
		var err *apiError
		switch {
		case base == "fields" && len(segs) == 1:
			err = s.parseFields(q, name, segs[0], v, k)
		case name == "include" && k.RefuseInclude:
			err = badParam("include", "includeParameter.invalid", "include is not supported here")
		case name == "include":
			err = q.parseInclude(v)
		case name == "provideDataConnections", name == "provideAuthorizationMeta":
			err = q.parseMetaFlag(name, v)
		case !collection:
		case base == "filter" && len(segs) >= 1:
			err = q.parseFilter(name, segs, v, newSyntax)
		case name == "sort":
			err = q.parseSort(v)
		case base == "page":
			err = q.parsePage(name, segs, v, k)
		case name == "count":
			err = q.parseCount(v)
		case name == "newFilterSyntax":
			if _, ok := parseFlag(v); !ok {
				err = badParam(name, "parameter.invalid", "newFilterSyntax must be true or false")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if len(q.sorts) == 0 {
		q.sorts = []sortKey{{f: t.field("id")}}
	}
	if q.after != nil && q.offsetMode {
		return nil, badParam("page[after]", "pageParameter.invalid", "page[after] and page[offset] cannot be combined")
	}
	if q.after != nil && q.after.SP != q.sortParam {
		return nil, badParam("page[after]", "pageParameter.invalid",
			"page[after] was issued for sort="+q.after.SP+", not sort="+q.sortParam)
	}
	return q, nil
}

// parseMetaFlag sets the flag asking for meta the API only sends on demand;
// data connections exist on users only.
func (q *query) parseMetaFlag(name, v string) *apiError {
	on, ok := parseFlag(v)
	if !ok {
		return badParam(name, "parameter.invalid", name+" must be true or false")
	}
	if name == "provideDataConnections" {
		q.dataConn = on && q.t.kind == kindUser
	} else {
		q.authMeta = on
	}
	return nil
}

func (q *query) parseCount(v string) *apiError {
	switch v {
	case "true":
		q.count = countTrue
	case "false":
		q.count = countFalse
	default:
		return badParam("count", "countParameter.invalid", "count must be true or false")
	}
	return nil
}

func parseFlag(v string) (on, ok bool) {
	switch v {
	case "true", "1", "":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}

// splitParam splits "filter[role][id]" into "filter" and ["role", "id"].
func splitParam(name string) (string, []string) {
	i := strings.IndexByte(name, '[')
	if i < 0 || !strings.HasSuffix(name, "]") {
		return name, nil
	}
	return name[:i], strings.Split(name[i+1:len(name)-1], "][")
}

func (s *Server) parseFields(q *query, param, typ, v string, k *Knobs) *apiError {
	kind := kindOfType(typ)
	if kind == kindNone {
		return badParam(param, "fieldsParameter.invalid", "unknown resource type "+strconv.Quote(typ))
	}
	t := s.types[kind]
	sel := fieldSel{}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if i := slices.Index(t.attrs, name); i >= 0 && (kind != kindUser || !s.userAttrs[i].drift || k.SchemaDrift) {
			sel.attrs.set(i)
			continue
		}
		if i := slices.IndexFunc(t.rels, func(r relDef) bool { return r.name == name && r.rendered }); i >= 0 {
			sel.rels.set(i)
			continue
		}
		return badParam(param, "fieldsParameter.invalid", typ+" has no attribute or relationship "+strconv.Quote(name))
	}
	q.fields[kind] = sel
	return nil
}

func (q *query) parseInclude(v string) *apiError {
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		r := q.t.rel(name)
		if r == nil || !r.rendered || r.target == kindNone {
			return badParam("include", "includeParameter.invalid",
				q.t.name+" has no includable relationship "+strconv.Quote(name))
		}
		if !slices.Contains(q.include, r) {
			q.include = append(q.include, r)
		}
	}
	return nil
}

func (q *query) parseSort(v string) *apiError {
	q.sortGiven = true
	var parts []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		name := strings.TrimPrefix(item, "-")
		if rel, attr, ok := strings.Cut(name, "."); ok {
			return badParam("sort", "sortParameter.deprecated",
				"sorting by a relationship's attribute ("+item+") is no longer supported: fetch with include="+rel+
					" and fields["+rel+"]="+attr+", then sort locally")
		}
		f := q.t.field(name)
		if f == nil || f.noSort {
			return badParam("sort", "sortParameter.invalid", q.t.name+" cannot be sorted by "+strconv.Quote(name))
		}
		q.sorts = append(q.sorts, sortKey{f: f, desc: item != name})
		parts = append(parts, item)
	}
	if len(q.sorts) == 0 {
		return badParam("sort", "sortParameter.invalid", "sort is empty")
	}
	// The tie-break is id ascending anyway, so a trailing "id" changes nothing.
	if n := len(q.sorts); n > 1 && q.sorts[n-1].f.name == "id" && !q.sorts[n-1].desc {
		q.sorts = q.sorts[:n-1]
	}
	q.sortParam = strings.Join(parts, ",")
	return nil
}

func (q *query) parsePage(param string, segs []string, v string, k *Knobs) *apiError {
	if len(segs) != 1 {
		return badParam(param, "pageParameter.invalid", "unknown page parameter "+param)
	}
	switch segs[0] {
	case "size", "limit":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return badParam(param, "pageParameter.invalid", param+" must be a positive integer")
		}
		q.size = min(n, k.pageCap()) // capped silently, as the real service does
	case "after":
		tok, err := decodeToken(v)
		if err != nil {
			return badParam(param, "pageParameter.invalid", "page[after] is not a valid cursor")
		}
		q.after = tok
	case "offset":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return badParam(param, "pageParameter.invalid", "page[offset] must be a non-negative integer")
		}
		if k.MaxOffset > 0 && n > k.MaxOffset {
			return badParam(param, "pageParameter.invalid",
				"page[offset] must be at most "+strconv.Itoa(k.MaxOffset)+"; use cursor pagination (page[after])")
		}
		q.offset, q.offsetMode = n, true
	default:
		return badParam(param, "pageParameter.invalid", param+" is not supported")
	}
	return nil
}

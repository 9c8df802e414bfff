package normalize

import (
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/internal/jsonscan"
	"github.com/usersync/usersync/sync/jsonapi"
)

// Page is a collection page typed by DecodePage.
type Page struct {
	Rows     []Row      // the resources that could be typed, in page order
	Rejected []Rejected // those that could not, for quarantine
	General  int        // resources decoded the general way (see DecodePage)
}

// Rejected is a resource that could not be typed, with why.
type Rejected struct {
	Resource jsonapi.Resource
	Err      error // a *FieldError
}

// DecodeData is a jsonapi.DataDecoder (see jsonapi.Pages.DecodeData): it
// types the "data" array at the start of b (b goes on with the rest of the
// body) and returns a *Page and the length of the array.
//
// It gives exactly what decoding the page with jsonapi.DecodeDocument and
// typing each resource with Row gives, in one pass over the bytes and
// without the intermediate jsonapi.Resource: decoding and typing were two
// thirds of a backfill's CPU. A resource in a form the single pass does not
// handle (an id sent as a string, a value of the wrong type, a member name
// with an escape, a repeated member, ...) is decoded and typed the general
// way, so the result never depends on which path a resource took. An error
// is a *jsonapi.DecodeError: the page is malformed.
//
// The rows refer to b's bytes instead of copying them (the string values,
// the attributes object the content hash is taken over, the data
// connections): b must not be written to while the rows are in use. The
// client reads each body into a buffer of its own and reuses it only once
// the caller releases the page (jsonapi.Page.Release), after writing the
// rows.
func (n *Normalizer) DecodeData(b []byte) (any, int, error) {
	return n.decodeArray(b)
}

func (n *Normalizer) decodeArray(b []byte) (*Page, int, error) {
	s := pageScanner{b: b, n: n, names: map[string]string{}}
	page := &Page{Rows: make([]Row, 0, len(b)/2048+1)} // users are 2-4 kB
	i := jsonscan.WS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, 0, &jsonapi.DecodeError{Reason: "data is not an array"}
	}
	end, ok := jsonscan.Elements(b, i, func(v int) (int, bool) {
		var row Row
		if end, ok := s.resource(v, &row); ok {
			page.Rows = append(page.Rows, row)
			return end, true
		}
		end, depth, _, ok := jsonscan.SkipNested(b, v)
		if !ok {
			return 0, false
		}
		page.General++
		if depth > MaxNesting {

			page.Rejected = append(page.Rejected, tooDeep(b[v:end]))
			return end, true
		}
		if err := n.decodeOne(page, b[v:end]); err != nil {
			s.err = err
			return 0, false
		}
		return end, true
	})

	if s.err != nil {
		return nil, 0, s.err
	}
	if !ok {
		return nil, 0, &jsonapi.DecodeError{Reason: "data is not valid JSON"}
	}
	return page, end, nil
}

// decodeOne decodes and types one resource object the general way.
func (n *Normalizer) decodeOne(page *Page, raw []byte) error {
	doc, err := jsonapi.DecodeDocument(wrapData(append(append([]byte{'['}, raw...), ']')))
	if err != nil {
		return err
	}
	for _, r := range doc.Data {
		n.add(page, r)
	}
	return nil
}

func (n *Normalizer) add(page *Page, r jsonapi.Resource) {
	row, err := n.Row(r)
	if err != nil {
		page.Rejected = append(page.Rejected, Rejected{Resource: r, Err: err})
		return
	}
	page.Rows = append(page.Rows, row)
}

func wrapData(data []byte) []byte {
	doc := make([]byte, 0, len(data)+9)
	doc = append(doc, `{"data":`...)
	return append(append(doc, data...), '}')
}

// pageScanner types the resources of one page.
type pageScanner struct {
	b     []byte // the "data" array and the rest of the body
	n     *Normalizer
	names map[string]string // relationship names and related types, stored once
	err   error
	vals  []any                // backing array of the rows' Values
	ids   []jsonapi.Identifier // the current resource's linkage
	rels  []linkage            // the current resource's relationships
	// guess[i] is the attribute that followed attribute i in the last
	// resource (guess[len] the first one), or -1.
	guess []int
	// The relationship names of the last resource, in the order sent,
	// the order that sorts them, and the type of the last identifier
	// of each: the API sends them the same way every time.
	relNames  []string
	relOrder  []int
	relTypes  []string
	typeGuess string // the type expected of the identifier being read
}

// intern returns b as a string, allocated once per page: names repeat on
// every resource.
func (s *pageScanner) intern(b []byte) string {
	if name, ok := s.names[string(b)]; ok {
		return name
	}
	name := string(b)
	s.names[name] = name
	return name
}

// linkage is one relationship of the current resource: its "data" shape
// and its identifiers, ids[from:to] of the scanner.
type linkage struct {
	name     string
	shape    jsonapi.Shape
	from, to int
}

// Members of a resource object, as bits.
const (
	memberID = 1 << iota
	memberType
	memberAttributes
	memberRelationships
	memberLinks
	memberMeta
)

// memberBit returns the bit of a resource member, 0 for another name.
func memberBit(key []byte) int {
	switch string(key) {
	case "id":
		return memberID
	case "type":
		return memberType
	case "attributes":
		return memberAttributes
	case "relationships":
		return memberRelationships
	case "links":
		return memberLinks
	case "meta":
		return memberMeta
	}
	return 0
}

// resource types the resource object at b[i] into row. It returns false for
// anything it leaves to the general path; row is then garbage.
func (s *pageScanner) resource(i int, row *Row) (int, bool) {
	if i >= len(s.b) || s.b[i] != '{' {
		return 0, false
	}
	n := s.n
	if len(s.vals) < len(n.res.Attributes) {
		s.vals = make([]any, 256*len(n.res.Attributes)) // one allocation per 256 rows
	}
	vals := s.vals[:len(n.res.Attributes):len(n.res.Attributes)]
	clear(vals) // a resource left to the general path may have filled some
	s.ids, s.rels = s.ids[:0], s.rels[:0]
	var seen int
	typeOK := false
	var attrs [2]int
	end, ok := jsonscan.Members(s.b, i, func(key []byte, plain bool, _, v int) (int, bool) {
		if !plain {
			return 0, false
		}
		bit := memberBit(key)
		if bit == 0 {
			if foldsTo(key, []string{"id", "type", "attributes", "relationships", "links", "meta"}) {
				return 0, false
			}
			return jsonscan.SkipValue(s.b, v, 0)
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		switch bit {
		case memberID:
			end, id, ok := s.id(v)
			row.ID = id
			return end, ok
		case memberType:
			end, esc, wide, _, ok := jsonscan.ScanString(s.b, v)
			if !ok || esc || wide {
				return 0, false
			}
			typeOK = string(s.b[v+1:end-1]) == n.res.Type
			return end, true
		case memberAttributes:
			end, ok := s.attributes(v, row, vals)
			attrs = [2]int{v, end}
			return end, ok
		case memberRelationships:
			return s.relationships(v)
		case memberLinks:
			return links(s.b, v)
		default:
			if s.b[v] != '{' {
				return 0, false
			}
			return s.meta(v, row)
		}
	})

	const required = memberID | memberType | memberAttributes
	if !ok || seen&required != required || !typeOK {
		return 0, false
	}
	s.vals = s.vals[len(vals):]
	row.Values = vals
	row.attrs = s.b[attrs[0]:attrs[1]:attrs[1]]
	if row.Raw == nil {
		row.Raw = []byte("{}")
	} else {
		row.Raw = append(row.Raw, '}')
	}
	row.ToOne = make([]ToOne, len(n.toOne))
	if n.updated >= 0 {
		if t, ok := vals[n.updated].(time.Time); ok {
			row.UpdatedAt = t
		}
	}
	// Room for every link at once (the general path leaves none: nil).
	row.LinksSent, row.Links = make([]string, 0, len(s.rels)), make([]Link, 0, len(s.ids))
	for _, k := range s.sortedRels() {
		l := s.rels[k]
		data := jsonapi.Linkage{Shape: l.shape, IDs: s.ids[l.from:l.to:l.to]}
		if err := n.relationship(row, l.name, data); err != nil {
			return 0, false
		}
	}
	if len(row.LinksSent) == 0 {
		row.LinksSent = nil
	}
	if len(row.Links) == 0 {
		row.Links = nil
	}
	return end, true
}

// sortedRels returns the order that sorts the current resource's
// relationships by name (the general path's order), worked out again only
// when the names differ from the last resource's.
func (s *pageScanner) sortedRels() []int {
	same := len(s.rels) == len(s.relNames)
	for k := 0; same && k < len(s.rels); k++ {
		same = s.rels[k].name == s.relNames[k]
	}
	if same {
		return s.relOrder
	}
	s.relNames, s.relOrder = s.relNames[:0], s.relOrder[:0]
	for k, l := range s.rels {
		s.relNames = append(s.relNames, l.name)
		s.relOrder = append(s.relOrder, k)
	}
	slices.SortFunc(s.relOrder, func(a, b int) int { return strings.Compare(s.relNames[a], s.relNames[b]) })
	return s.relOrder
}

// attributes types the attributes object at b[i] into vals, and the
// attributes the catalog does not know into row.Unknown and row.Raw (left
// open: the caller closes it).
func (s *pageScanner) attributes(i int, row *Row, vals []any) (int, bool) {
	if i >= len(s.b) || s.b[i] != '{' {
		return 0, false
	}
	attrs := s.n.attrs
	var seen [4]uint64 // catalog attributes met, by index
	if len(attrs.res.Attributes) > 64*len(seen) {
		return 0, false
	}
	if s.guess == nil {
		s.guess = make([]int, len(attrs.res.Attributes)+1)
		for j := range s.guess {
			s.guess[j] = -1
		}
	}
	prev := len(attrs.res.Attributes) // before the first attribute
	end, ok := jsonscan.Members(s.b, i, func(key []byte, plain bool, k, v int) (int, bool) {
		if !plain {
			return 0, false
		}

		idx, known := s.guess[prev], true
		if idx < 0 || string(key) != attrs.res.Attributes[idx].Name {
			if idx, known = attrs.index[string(key)]; known {
				s.guess[prev] = idx
			}
		}
		if !known {
			end, ok := jsonscan.SkipValue(s.b, v, 0)
			if !ok {
				return 0, false
			}
			row.Unknown = append(row.Unknown, string(key))
			if row.Raw == nil {
				row.Raw = append(row.Raw, '{')
			} else {
				row.Raw = append(row.Raw, ',')
			}
			row.Raw = append(append(append(row.Raw, s.b[k:k+len(key)+2]...), ':'), s.b[v:end]...)
			return end, true
		}
		if seen[idx/64]&(1<<(idx%64)) != 0 {
			return 0, false
		}
		prev = idx
		seen[idx/64] |= 1 << (idx % 64)
		end, val, ok := s.value(v, attrs.res.Attributes[idx].Type)
		vals[idx] = val
		return end, ok
	})

	// A value holding what PostgreSQL cannot store (\u0000, bytes that are
	// not UTF-8, a lone surrogate) was refused above: the general path
	// names it.
	return end, ok
}

// value types the attribute value at b[v].
func (s *pageScanner) value(v int, t schema.JSONType) (end int, val any, ok bool) {
	b := s.b
	switch b[v] {
	case 'n':
		end, ok = jsonscan.Literal(b, v, "null")
		return end, nil, ok
	case 't', 'f':
		if t != schema.Boolean {
			return 0, nil, false
		}
		if b[v] == 't' {
			end, ok = jsonscan.Literal(b, v, "true")
			return end, true, ok
		}
		end, ok = jsonscan.Literal(b, v, "false")
		return end, false, ok
	case '"':
		if t != schema.String && t != schema.DateTime {
			return 0, nil, false
		}
		var esc, bad bool
		end, esc, _, bad, ok = jsonscan.ScanString(b, v)
		if !ok || bad {
			return 0, nil, false // the general path names what is bad
		}
		var str string
		if !esc {
			// The string is b's own bytes, not a copy: the rows already
			// keep b (Row.attrs, Row.DataConnections), and nothing
			// writes to it (see DecodeData).
			str = bytesString(b[v+1 : end-1])
		} else {
			var plain bool
			if str, plain = jsonscan.Unescape(b[v+1 : end-1]); !plain {
				str = gjson.Parse(string(b[v:end])).Str // the general path's decoder
			}
		}
		if t == schema.String {
			return end, str, true
		}
		ts, err := ParseTime(str)
		if err != nil {
			return 0, nil, false
		}
		return end, ts, true
	case '{', '[':
		if t != schema.Object {
			return 0, nil, false
		}
		if end, ok = jsonscan.SkipValue(b, v, 0); !ok {
			return 0, nil, false
		}
		return end, b[v:end:end], true
	}
	if t != schema.Integer {
		return 0, nil, false
	}
	end, integer, ok := jsonscan.ScanNumber(b, v)
	if !ok || !integer {
		return 0, nil, false
	}
	n, ok := jsonscan.ParseInt(b[v:end])
	if !ok {
		return 0, nil, false
	}
	return end, n, true
}

// relationships reads the relationships object at b[i] into s.rels and
// s.ids.
func (s *pageScanner) relationships(i int) (int, bool) {
	if s.b[i] != '{' {
		return 0, false
	}
	return jsonscan.Members(s.b, i, func(key []byte, plain bool, k, v int) (int, bool) {
		if !plain || s.b[v] != '{' {
			return 0, false
		}
		p := len(s.rels)
		var name string
		if p < len(s.relNames) && string(key) == s.relNames[p] {
			name = s.relNames[p]
		} else {
			name = s.intern(key)
		}
		if p < len(s.relTypes) {
			s.typeGuess = s.relTypes[p]
		}
		for _, l := range s.rels {
			if l.name == name {
				return 0, false
			}
		}
		l := linkage{name: name, shape: jsonapi.ShapeAbsent, from: len(s.ids)}
		var seen int
		end, ok := jsonscan.Members(s.b, v, func(key []byte, plain bool, _, v int) (int, bool) {
			if !plain {
				return 0, false
			}
			switch string(key) {
			case "data":
				if seen&1 != 0 {
					return 0, false
				}
				seen |= 1
				return s.linkageData(v, &l)
			case "links":
				if seen&2 != 0 {
					return 0, false
				}
				seen |= 2
				return links(s.b, v)
			case "meta":
				if seen&4 != 0 {
					return 0, false
				}
				seen |= 4
				return jsonscan.SkipValue(s.b, v, 0)
			}
			if foldsTo(key, []string{"data", "links", "meta"}) {
				return 0, false
			}
			return jsonscan.SkipValue(s.b, v, 0)
		})

		l.to = len(s.ids)
		s.rels = append(s.rels, l)
		for len(s.relTypes) <= p {
			s.relTypes = append(s.relTypes, "")
		}
		s.relTypes[p] = s.typeGuess
		return end, ok
	})

}

// linkageData reads a relationship's "data" at b[v].
func (s *pageScanner) linkageData(v int, l *linkage) (int, bool) {
	switch s.b[v] {
	case 'n':
		l.shape = jsonapi.ShapeNull
		return jsonscan.Literal(s.b, v, "null")
	case '{':
		l.shape = jsonapi.ShapeOne
		return s.identifier(v)
	case '[':
		l.shape = jsonapi.ShapeMany
		return jsonscan.Elements(s.b, v, s.identifier)
	}
	return 0, false
}

// id reads an id at b[v] in the form the single pass handles: a JSON
// integer that is a valid jsonapi.ID (a string or anything else goes the
// general way).
func (s *pageScanner) id(v int) (int, int64, bool) {
	end, integer, ok := jsonscan.ScanNumber(s.b, v)
	if !ok || !integer {
		return 0, 0, false
	}
	n, ok := jsonscan.ParseInt(s.b[v:end])
	if !ok || jsonapi.ID(n) == jsonapi.InvalidID {
		return 0, 0, false
	}
	return end, n, true
}

// identifier reads the resource identifier object at b[v] into s.ids.
func (s *pageScanner) identifier(v int) (int, bool) {
	if s.b[v] != '{' {
		return 0, false
	}
	var id jsonapi.Identifier
	var seen int
	end, ok := jsonscan.Members(s.b, v, func(key []byte, plain bool, _, v int) (int, bool) {
		if !plain {
			return 0, false
		}
		switch string(key) {
		case "id":
			if seen&1 != 0 {
				return 0, false
			}
			seen |= 1
			end, n, ok := s.id(v)
			id.ID = jsonapi.ID(n)
			return end, ok
		case "type":
			if seen&2 != 0 {
				return 0, false
			}
			seen |= 2
			end, esc, wide, _, ok := jsonscan.ScanString(s.b, v)
			if !ok || esc || wide || end-v == 2 {
				return 0, false
			}
			if typ := s.b[v+1 : end-1]; string(typ) == s.typeGuess {
				id.Type = s.typeGuess
			} else {
				id.Type = s.intern(typ)
				s.typeGuess = id.Type
			}
			return end, true
		case "meta":
			if seen&4 != 0 {
				return 0, false
			}
			seen |= 4
			return jsonscan.SkipValue(s.b, v, 0)
		}
		if foldsTo(key, []string{"id", "type", "meta"}) {
			return 0, false
		}
		return jsonscan.SkipValue(s.b, v, 0)
	})

	if !ok || seen&3 != 3 {
		return 0, false
	}
	s.ids = append(s.ids, id)
	return end, true
}

// meta reads canWrite and dataConnections from the meta object at b[i].
func (s *pageScanner) meta(i int, row *Row) (int, bool) {
	var seen int
	return jsonscan.Members(s.b, i, func(key []byte, plain bool, _, v int) (int, bool) {
		if !plain {
			return 0, false
		}
		switch string(key) {
		case "dataConnections":
			if seen&1 != 0 {
				return 0, false
			}
			seen |= 1
			end, ok := jsonscan.SkipValue(s.b, v, 0)
			if !ok {
				return 0, false
			}
			row.DataConnectionsSent = true
			if s.b[v] != 'n' {
				row.DataConnections = s.b[v:end:end]
			}
			return end, ok
		case "canWrite":
			if seen&2 != 0 {
				return 0, false
			}
			seen |= 2
			switch s.b[v] {
			case 't', 'f':
				b := s.b[v] == 't'
				row.CanWrite = &b
				if b {
					return jsonscan.Literal(s.b, v, "true")
				}
				return jsonscan.Literal(s.b, v, "false")
			case 'n':
				return jsonscan.Literal(s.b, v, "null")
			}
			return 0, false
		}
		return jsonscan.SkipValue(s.b, v, 0)
	})

}

// links checks a links object at b[v]: null, or an object whose members are
// strings or null (the general decoder refuses some other forms).
func links(b []byte, v int) (int, bool) {
	switch b[v] {
	case 'n':
		return jsonscan.Literal(b, v, "null")
	case '{':
		return jsonscan.Members(b, v, func(_ []byte, _ bool, _, v int) (int, bool) {
			switch b[v] {
			case '"':
				end, _, _, _, ok := jsonscan.ScanString(b, v)
				return end, ok
			case 'n':
				return jsonscan.Literal(b, v, "null")
			}
			return 0, false
		})

	}
	return 0, false
}

// foldsTo reports whether key equals one of names in another case.
func foldsTo(key []byte, names []string) bool {
	for _, n := range names {
		if len(key) == len(n) && strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// bytesString returns b as a string without copying it: b must not be
// written while the string is in use. The single pass gives it bytes of a
// response body only. A body is reused
// for a later page once its page is released (jsonapi.Page.Release, called
// by warehouse.UsersLoad after the page's commit), so a row's strings live
// no longer than its page; under the usersync_poison build tag a released
// body is overwritten at once, and a row kept longer fails the tests.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // G103: audited; the only use of unsafe
}

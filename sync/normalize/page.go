package normalize

import (
	"time"

	"github.com/usersync/usersync/sync/internal/jsonscan"
	"github.com/usersync/usersync/sync/jsondoc"
)

// Page is a collection page typed by DecodePage.
type Page struct {
	Rows     []Row      // the resources that could be typed, in page order
	Rejected []Rejected // those that could not, for quarantine
	General  int        // resources decoded the general way (see DecodePage)
}

// Rejected is a resource that could not be typed, with why.
type Rejected struct {
	Resource jsondoc.Resource
	Err      error // a *FieldError
}

// DecodeData is a jsondoc.DataDecoder[*Page] that types a users page's "data" array
// in one pass, because decoding and then typing was two thirds of a
// backfill's CPU. It returns a *Page with exactly the rows Row would give,
// which refer to b's bytes: b must stay unchanged while they are in use.
func (n *Normalizer) DecodeData(b []byte) (*Page, int, error) {
	return n.decodeArray(b)
}

func (n *Normalizer) decodeArray(b []byte) (*Page, int, error) {
	s := pageScanner{b: b, n: n, names: map[string]string{}}
	page := &Page{Rows: make([]Row, 0, len(b)/2048+1)} // users are 2-4 kB
	i := jsonscan.WS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, 0, &jsondoc.DecodeError{Reason: "data is not an array"}
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
		return nil, 0, &jsondoc.DecodeError{Reason: "data is not valid JSON"}
	}
	return page, end, nil
}

// decodeOne decodes and types one resource object the general way.
func (n *Normalizer) decodeOne(page *Page, raw []byte) error {
	doc, err := jsondoc.Decode(wrapData(append(append([]byte{'['}, raw...), ']')))
	if err != nil {
		return err
	}
	for _, r := range doc.Data {
		n.add(page, r)
	}
	return nil
}

func (n *Normalizer) add(page *Page, r jsondoc.Resource) {
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
	ids   []jsondoc.Identifier // the current resource's linkage
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
	shape    jsondoc.Shape
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
	m := resourceMembers{row: row, vals: vals}
	end, ok := jsonscan.Members(s.b, i, func(key []byte, plain bool, _, v int) (int, bool) {
		return s.member(&m, key, plain, v)
	})
	const required = memberID | memberType | memberAttributes
	if !ok || m.seen&required != required || !m.typeOK {
		return 0, false
	}
	s.vals = s.vals[len(vals):]
	return end, s.finish(row, vals)
}

// resourceMembers is what resource has read of a resource object so far.
type resourceMembers struct {
	row    *Row
	vals   []any
	seen   int  // member bits
	typeOK bool // "type" is the catalog's
}

// member reads the resource member key whose value is at b[v].
func (s *pageScanner) member(m *resourceMembers, key []byte, plain bool, v int) (int, bool) {
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
	if m.seen&bit != 0 {
		return 0, false
	}
	m.seen |= bit
	switch bit {
	case memberID:
		end, id, ok := s.id(v)
		m.row.ID = id
		return end, ok
	case memberType:
		end, esc, wide, _, ok := jsonscan.ScanString(s.b, v)
		if !ok || esc || wide {
			return 0, false
		}
		m.typeOK = string(s.b[v+1:end-1]) == s.n.res.Type
		return end, true
	case memberAttributes:
		return s.attributes(v, m.row, m.vals)
	case memberRelationships:
		return s.relationships(v)
	case memberLinks:
		return links(s.b, v)
	}
	if s.b[v] != '{' {
		return 0, false
	}
	return s.meta(v, m.row)
}

// finish completes a row whose members were read: its values and its
// relationships in the general path's order.
func (s *pageScanner) finish(row *Row, vals []any) bool {
	n := s.n
	row.Values = vals
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
		data := jsondoc.Linkage{Shape: l.shape, IDs: s.ids[l.from:l.to:l.to]}
		if err := n.relationship(row, l.name, data); err != nil {
			return false
		}
	}
	if len(row.LinksSent) == 0 {
		row.LinksSent = nil
	}
	if len(row.Links) == 0 {
		row.Links = nil
	}
	n.policy.Apply(row)
	return true
}

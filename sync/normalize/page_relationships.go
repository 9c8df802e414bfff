package normalize

import (
	"slices"
	"strings"

	"github.com/usersync/usersync/sync/internal/jsonscan"
	"github.com/usersync/usersync/sync/jsondoc"
)

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
		l := linkage{name: name, shape: jsondoc.ShapeAbsent, from: len(s.ids)}
		end, ok := s.relationship(v, &l)
		l.to = len(s.ids)
		s.rels = append(s.rels, l)
		for len(s.relTypes) <= p {
			s.relTypes = append(s.relTypes, "")
		}
		s.relTypes[p] = s.typeGuess
		return end, ok
	})
}

// relationship reads the relationship object at b[v] into l.
func (s *pageScanner) relationship(v int, l *linkage) (int, bool) {
	var seen int
	return jsonscan.Members(s.b, v, func(key []byte, plain bool, _, v int) (int, bool) {
		if !plain {
			return 0, false
		}
		bit := 0
		switch string(key) {
		case "data":
			bit = 1
		case "links":
			bit = 2
		case "meta":
			bit = 4
		default:
			if foldsTo(key, []string{"data", "links", "meta"}) {
				return 0, false
			}
			return jsonscan.SkipValue(s.b, v, 0)
		}
		if seen&bit != 0 {
			return 0, false
		}
		seen |= bit
		switch bit {
		case 1:
			return s.linkageData(v, l)
		case 2:
			return links(s.b, v)
		}
		return jsonscan.SkipValue(s.b, v, 0)
	})
}

// linkageData reads a relationship's "data" at b[v].
func (s *pageScanner) linkageData(v int, l *linkage) (int, bool) {
	switch s.b[v] {
	case 'n':
		l.shape = jsondoc.ShapeNull
		return jsonscan.Literal(s.b, v, "null")
	case '{':
		l.shape = jsondoc.ShapeOne
		return s.identifier(v)
	case '[':
		l.shape = jsondoc.ShapeMany
		return jsonscan.Elements(s.b, v, s.identifier)
	}
	return 0, false
}

// id reads an id at b[v] in the form the single pass handles: a JSON
// integer that is a valid jsondoc.ID (a string or anything else goes the
// general way).
func (s *pageScanner) id(v int) (int, int64, bool) {
	end, integer, ok := jsonscan.ScanNumber(s.b, v)
	if !ok || !integer {
		return 0, 0, false
	}
	n, ok := jsonscan.ParseInt(s.b[v:end])
	if !ok || jsondoc.ID(n) == jsondoc.InvalidID {
		return 0, 0, false
	}
	return end, n, true
}

// identifier reads the resource identifier object at b[v] into s.ids.
func (s *pageScanner) identifier(v int) (int, bool) {
	if s.b[v] != '{' {
		return 0, false
	}
	var id jsondoc.Identifier
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
			id.ID = jsondoc.ID(n)
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

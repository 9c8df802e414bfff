package jsondoc

import "github.com/usersync/usersync/sync/internal/jsonscan"

// This file holds the fast path of relationship linkage decoding. A page of
// 1000 users carries about 9000 linkages; a nested decoder call for each
// costs more than the rest of the page. The parser below accepts only the
// plain forms and reports ok=false for anything else (escapes, "meta",
// unknown keys, bad ids), which the caller then hands to the JSON decoder,
// so errors are always those of the full decoder.

// parseLinkage parses null, one identifier object, or an array of them.
func parseLinkage(b []byte) (Shape, []Identifier, bool) {
	i := jsonscan.WS(b, 0)
	if i >= len(b) {
		return 0, nil, false
	}
	switch b[i] {
	case 'n':
		if string(b[i:]) == "null" || string(trimSpaceRight(b[i:])) == "null" {
			return ShapeNull, nil, true
		}
		return 0, nil, false
	case '{':
		id, end, ok := parseIdentifier(b, i)
		if !ok || jsonscan.WS(b, end) != len(b) {
			return 0, nil, false
		}
		return ShapeOne, []Identifier{id}, true
	case '[':
		return parseIdentifierArray(b, i)
	}
	return 0, nil, false
}

func parseIdentifierArray(b []byte, i int) (Shape, []Identifier, bool) {
	ids := make([]Identifier, 0, 4)
	i = jsonscan.WS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return ShapeMany, ids, jsonscan.WS(b, i+1) == len(b)
	}
	for i < len(b) {
		id, end, ok := parseIdentifier(b, i)
		if !ok {
			return 0, nil, false
		}
		ids = append(ids, id)
		i = jsonscan.WS(b, end)
		if i >= len(b) {
			return 0, nil, false
		}
		switch b[i] {
		case ',':
			i = jsonscan.WS(b, i+1)
		case ']':
			return ShapeMany, ids, jsonscan.WS(b, i+1) == len(b)
		default:
			return 0, nil, false
		}
	}
	return 0, nil, false
}

// parseIdentifier parses {"id": N or "N", "type": "t"} starting at b[i] == '{'
// and returns the index after the closing brace.
func parseIdentifier(b []byte, i int) (Identifier, int, bool) {
	var id Identifier
	var hasID, hasType bool
	if i >= len(b) || b[i] != '{' {
		return id, 0, false
	}
	i = jsonscan.WS(b, i+1)
	for i < len(b) {
		key, next, ok := plainString(b, i)
		if !ok {
			return id, 0, false
		}
		i = jsonscan.WS(b, next)
		if i >= len(b) || b[i] != ':' {
			return id, 0, false
		}
		i = jsonscan.WS(b, i+1)
		switch string(key) {
		case "id":
			if hasID {
				return id, 0, false
			}
			v, next, ok := plainIDValue(b, i)
			if !ok {
				return id, 0, false
			}
			id.ID, hasID, i = ID(v), true, next
		case "type":
			if hasType {
				return id, 0, false
			}
			t, next, ok := plainString(b, i)
			if !ok {
				return id, 0, false
			}
			id.Type, hasType, i = internType(t), true, next
		default:
			return id, 0, false
		}
		i = jsonscan.WS(b, i)
		if i >= len(b) {
			return id, 0, false
		}
		switch b[i] {
		case ',':
			i = jsonscan.WS(b, i+1)
		case '}':
			return id, i + 1, hasID && hasType
		default:
			return id, 0, false
		}
	}
	return id, 0, false
}

// plainString returns the content of the string at b[i] when it has no
// escape and no control byte.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainIDValue parses an integer, bare or in a string.
func plainIDValue(b []byte, i int) (int64, int, bool) {
	if i < len(b) && b[i] == '"' {
		s, next, ok := plainString(b, i)
		if !ok {
			return 0, 0, false
		}
		n, ok := jsonscan.ParseInt(s)
		return n, next, ok
	}
	j := i
	for j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
		j++
	}
	n, ok := jsonscan.ParseInt(b[i:j])
	return n, j, ok
}

// internType returns the resource types of this API without allocating.
func internType(t []byte) string {
	switch string(t) {
	case "user":
		return "user"
	case "team":
		return "team"
	case "role":
		return "role"
	case "profile":
		return "profile"
	case "mailbox":
		return "mailbox"
	case "contentCategory":
		return "contentCategory"
	}
	return string(t)
}

func trimSpaceRight(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\r':
			b = b[:len(b)-1]
		default:
			return b
		}
	}
	return b
}

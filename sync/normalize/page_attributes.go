package normalize

import (
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/internal/jsonscan"
)

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
		return s.stringValue(v, t)
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
	return end, n, ok
}

// stringValue types the string at b[v] as a String or a DateTime.
func (s *pageScanner) stringValue(v int, t schema.JSONType) (end int, val any, ok bool) {
	b := s.b
	end, esc, _, bad, ok := jsonscan.ScanString(b, v)
	if !ok || bad {
		return 0, nil, false // the general path names what is bad
	}
	var str string
	if !esc {
		// The string is b's own bytes, not a copy: the rows already
		// keep b (Row.DataConnections, the values), and nothing
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
}

// bytesString returns b as a string without copying it: b must not be
// written while the string is in use. The single pass gives it bytes of a
// response body only. A body is reused
// for a later page once its page is released (jsonapi.Page.Release, called
// by the syncer's pipeline after the page's commit), so a row's strings live
// no longer than its page; under the usersync_poison build tag a released
// body is overwritten at once, and a row kept longer fails the tests.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // G103: audited; the only use of unsafe
}

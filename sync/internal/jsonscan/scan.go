package jsonscan

// MaxDepth bounds the nesting SkipValue follows (normalize hands deeper
// values to its general decoder).
const MaxDepth = 64

// WS returns the index of the first byte at or after i that is not JSON
// white space.
func WS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Literal checks that b[i:] starts with lit (true, false or null).
func Literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// SkipValue returns the index after the value at b[i], checking its syntax.
// It refuses a bad string (see ScanString) and nesting deeper than MaxDepth:
// see SkipNested.
func SkipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, _, bad, ok := ScanString(b, i)
		return end, ok && !bad
	case '{':
		if depth >= MaxDepth {
			return 0, false
		}
		return Members(b, i, func(_ []byte, _ bool, _, v int) (int, bool) { return SkipValue(b, v, depth+1) })
	case '[':
		if depth >= MaxDepth {
			return 0, false
		}
		return Elements(b, i, func(v int) (int, bool) { return SkipValue(b, v, depth+1) })
	case 't':
		return Literal(b, i, "true")
	case 'f':
		return Literal(b, i, "false")
	case 'n':
		return Literal(b, i, "null")
	}
	end, _, ok := ScanNumber(b, i)
	return end, ok
}

// Members walks the object at b[i] == '{', refusing a bad key, and calls f
// for each member with the key's contents, whether the key is plain (ASCII,
// no escape) and the indexes of the key's quote and of the value. f returns
// the index after the value, and Members the index after the object.
func Members(b []byte, i int, f func(key []byte, plain bool, k, v int) (int, bool)) (int, bool) {
	i = WS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, esc, wide, bad, ok := ScanString(b, i)
		if !ok || bad {
			return 0, false
		}
		k := i
		i = WS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = WS(b, i+1)
		if i >= len(b) {
			return 0, false
		}
		if i, ok = f(b[k+1:end-1], !esc && !wide, k, i); !ok {
			return 0, false
		}
		i = WS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = WS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// Elements walks the array at b[i] == '[', calling f with the index of each
// element; f returns the index after it. Elements returns the index after
// the array.
func Elements(b []byte, i int, f func(v int) (int, bool)) (int, bool) {
	i = WS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		if i, ok = f(i); !ok {
			return 0, false
		}
		i = WS(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = WS(b, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

package jsonscan

// SkipNested is SkipValue at any depth and whatever its strings hold: it
// returns the index after the value, its depth (0 for a scalar) and whether a
// string in it is bad. Its open brackets are kept in a slice, so a body of a
// million brackets costs a megabyte rather than a goroutine's stack.
func SkipNested(b []byte, i int) (end, depth int, bad, ok bool) {
	var buf [64]byte
	open := buf[:0] // the brackets of the containers around b[i]
	for {
		// A value at b[i].
		if i >= len(b) {
			return 0, 0, false, false
		}
		if c := b[i]; c == '{' || c == '[' {
			open = append(open, c)
			depth = max(depth, len(open))
			i = WS(b, i+1)
			if i < len(b) && b[i] == closer(c) {
				open = open[:len(open)-1]
				i++
			} else {
				if c == '{' {
					if i, ok = skipKey(b, i, &bad); !ok {
						return 0, 0, false, false
					}
				}
				continue
			}
		} else {
			var sbad bool
			if i, sbad, ok = skipScalar(b, i); !ok {
				return 0, 0, false, false
			}
			bad = bad || sbad
		}
		if i, open, ok = afterValue(b, i, open, &bad); !ok {
			return 0, 0, false, false
		}
		if len(open) == 0 {
			return i, depth, bad, true
		}
	}
}

// closer returns the bracket that closes c.
func closer(c byte) byte {
	if c == '{' {
		return '}'
	}
	return ']'
}

// skipScalar returns the index after the string, number or literal at b[i]
// and whether it is a bad string.
func skipScalar(b []byte, i int) (end int, bad, ok bool) {
	switch b[i] {
	case '"':
		end, _, _, bad, ok = ScanString(b, i)
		return end, bad, ok
	case 't':
		end, ok = Literal(b, i, "true")
	case 'f':
		end, ok = Literal(b, i, "false")
	case 'n':
		end, ok = Literal(b, i, "null")
	default:
		end, _, ok = ScanNumber(b, i)
	}
	return end, false, ok
}

// afterValue closes the containers that end after a value ending at b[i],
// and when one goes on, steps to its next value (past a key in an object).
// It returns the index of that value (or the end, when open is empty) and
// the containers still open.
func afterValue(b []byte, i int, open []byte, bad *bool) (int, []byte, bool) {
	for len(open) > 0 {
		i = WS(b, i)
		if i >= len(b) {
			return 0, nil, false
		}
		top := open[len(open)-1]
		switch b[i] {
		case ',':
			i = WS(b, i+1)
			if top == '{' {
				var ok bool
				if i, ok = skipKey(b, i, bad); !ok {
					return 0, nil, false
				}
			}
			return i, open, true
		case closer(top):
			open = open[:len(open)-1]
			i++
		default:
			return 0, nil, false
		}
	}
	return i, open, true
}

// skipKey skips an object key and its colon at b[i], returning the index of
// the value; a bad key sets *bad.
func skipKey(b []byte, i int, bad *bool) (int, bool) {
	end, _, _, kbad, ok := ScanString(b, i)
	if !ok {
		return 0, false
	}
	*bad = *bad || kbad
	i = WS(b, end)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return WS(b, i+1), true
}

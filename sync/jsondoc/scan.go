package jsondoc

import "github.com/usersync/usersync/sync/internal/jsonscan"

// dataAt finds the top-level "data" member of a document and returns its
// shape and the index of its value, reading only up to it: servers send
// "data" first, so this costs next to nothing, and it spares the decoder a
// copy of the whole array. The full decoder checks the syntax afterwards;
// this scan only needs to find its way.
func dataAt(body []byte) (Shape, int, error) {
	i := jsonscan.WS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, 0, &DecodeError{Reason: "document is not a JSON object"}
	}
	i = jsonscan.WS(body, i+1)
	for i < len(body) && body[i] == '"' {
		keyEnd, _, _, _, ok := jsonscan.ScanString(body, i)
		if !ok {
			break
		}
		key := body[i+1 : keyEnd-1]
		i = jsonscan.WS(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			break
		}
		i = jsonscan.WS(body, i+1)
		if string(key) == "data" {
			shape, err := shapeAt(body, i)
			return shape, i, err
		}
		end, ok := skipJSONValue(body, i)
		if !ok {
			break
		}
		i = jsonscan.WS(body, end)
		if i < len(body) && body[i] == ',' {
			i = jsonscan.WS(body, i+1)
		}
	}
	// No "data" member found (or the scan got lost in bad syntax, which
	// the decoder will then report).
	return ShapeAbsent, 0, nil
}

func shapeAt(body []byte, i int) (Shape, error) {
	if i < len(body) {
		switch body[i] {
		case '[':
			return ShapeMany, nil
		case '{':
			return ShapeOne, nil
		case 'n':
			return ShapeNull, nil
		}
	}
	return 0, &DecodeError{Reason: "data is neither an object, an array nor null"}
}

// skipJSONValue returns the index after the value starting at b[i], counting
// brackets outside strings. It validates only the strings (unlike
// jsonscan.SkipValue, it follows any depth: the decoder has the last word).
func skipJSONValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end, _, _, _, ok := jsonscan.ScanString(b, i)
			if !ok {
				return 0, false
			}
			i = end
			if depth == 0 {
				return i, true
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, true // the end of the object holding a scalar
			}
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case ',':
			if depth == 0 {
				return i, true
			}
		}
		i++
	}
	return i, depth == 0
}

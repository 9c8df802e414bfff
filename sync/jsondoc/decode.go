package jsondoc

import (
	"encoding/json"
	"errors"

	"github.com/usersync/usersync/sync/internal/jsonscan"
)

// wireMany, wireOne and wireNone are the shapes decoded from a body, chosen
// by the form of its "data" member before decoding, so that the big array of
// a collection page is decoded in one pass with no intermediate copy.
type wireMany struct {
	Data     []Resource      `json:"data"`
	Included []Resource      `json:"included"`
	Links    Links           `json:"links"`
	Meta     json.RawMessage `json:"meta"`
	Errors   []ErrorObject   `json:"errors"`
}

// wireManyRaw is wireMany for a DataDecoder: "data" is left as sent, and
// "included" is not decoded (see restOf).
type wireManyRaw struct {
	Data   json.RawMessage `json:"data"`
	Links  Links           `json:"links"`
	Meta   json.RawMessage `json:"meta"`
	Errors []ErrorObject   `json:"errors"`
}

type wireOne struct {
	Data     *Resource       `json:"data"`
	Included []Resource      `json:"included"`
	Links    Links           `json:"links"`
	Meta     json.RawMessage `json:"meta"`
	Errors   []ErrorObject   `json:"errors"`
}

type wireNone struct {
	Included []Resource      `json:"included"`
	Links    Links           `json:"links"`
	Meta     json.RawMessage `json:"meta"`
	Errors   []ErrorObject   `json:"errors"`
}

// DataDecoder decodes the "data" array of a collection page in place of
// DecodeWith, for a caller that can type the resources in one pass: b starts
// with the array as sent and goes on with the rest of the body; the decoder
// returns its result and the length of the array, closing bracket included.
// DecodeWith returns the result beside the document, whose Data stays empty;
// the included resources are checked but not decoded (Included is nil):
// such a walk includes them for the linkage they bring into data. An error
// means the body is malformed. The result may refer to b.
type DataDecoder[T any] func(b []byte) (decoded T, n int, err error)

// Decode decodes a JSON:API top-level document. Every error it returns
// is a *DecodeError. An id that is not an integer does not fail the
// document: it decodes as InvalidID, and the resource keeps its Raw JSON.
func Decode(body []byte) (*Document, error) {
	doc, _, err := DecodeWith[struct{}](body, nil)
	return doc, err
}

// DecodeWith is Decode, with "data" left to decode when it is an array and
// decode is not nil: it returns decode's result beside the document, and
// T's zero value when decode was not called.
func DecodeWith[T any](body []byte, decode DataDecoder[T]) (*Document, T, error) {
	var decoded T
	shape, at, err := dataAt(body)
	if err != nil {
		return nil, decoded, err
	}
	doc := &Document{DataShape: shape}
	switch {
	case shape == ShapeMany && decode != nil:
		var w wireManyRaw
		decoded, w, err = decodeData(body, at, decode)
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				return nil, decoded, err
			}
			return nil, decoded, &DecodeError{Reason: "invalid data", Err: err}
		}
		doc.Data, doc.Links, doc.Meta, doc.Errors = []Resource{}, w.Links, w.Meta, w.Errors
	case shape == ShapeMany:
		var w wireMany
		err = unmarshal(body, &w)
		doc.Data, doc.Included, doc.Links, doc.Meta, doc.Errors = w.Data, w.Included, w.Links, w.Meta, w.Errors
		if doc.Data == nil {
			doc.Data = []Resource{}
		}
	case shape == ShapeOne:
		var w wireOne
		err = unmarshal(body, &w)
		if w.Data != nil {
			doc.Data = []Resource{*w.Data}
		}
		doc.Included, doc.Links, doc.Meta, doc.Errors = w.Included, w.Links, w.Meta, w.Errors
	default:
		var w wireNone
		err = unmarshal(body, &w)
		doc.Included, doc.Links, doc.Meta, doc.Errors = w.Included, w.Links, w.Meta, w.Errors
	}
	if err == nil {
		err = doc.check(body)
	}
	if err != nil {
		var zero T
		return nil, zero, err
	}
	return doc, decoded, nil
}

// check validates a decoded document and keeps the raw JSON of its
// resources holding an invalid id.
func (d *Document) check(body []byte) error {
	if d.DataShape == ShapeAbsent && d.Errors == nil && d.Meta == nil {
		return &DecodeError{Reason: "document has none of data, errors and meta"}
	}
	if err := d.validate(); err != nil {
		return err
	}
	return d.keepRawOfInvalid(body)
}

// decodeData decodes the "data" array starting at body[at] with decode, and
// the rest of the document with the JSON decoder: the decoder never reads
// the array (the rest is decoded with it replaced by []), and decode checks
// its syntax. A document repeating "data" is decoded whole instead, as the
// JSON decoder keeps the last one.
func decodeData[T any](body []byte, at int, decode DataDecoder[T]) (T, wireManyRaw, error) {
	var w wireManyRaw
	var zero T
	decoded, n, err := decode(body[at:])
	if err != nil {
		return zero, w, err
	}
	if n <= 0 || n > len(body)-at {
		return zero, w, &DecodeError{Reason: "the data decoder returned an invalid length"}
	}
	if err := unmarshal(restOf(body, at, n), &w); err != nil {
		return zero, w, err
	}
	if string(w.Data) == "[]" {
		return decoded, w, nil
	}
	if err := unmarshal(body, &w); err != nil {
		return zero, w, err
	}
	if decoded, n, err = decode(w.Data); err != nil {
		return zero, w, err
	}
	if n != len(w.Data) {
		return zero, w, &DecodeError{Reason: "data is followed by more"}
	}
	return decoded, w, nil
}

// restOf returns body with its "data" array (body[at:at+n]) replaced by
// [], and with the value of a top-level "included" member replaced by []
// once jsonscan has checked its syntax. A walk whose pages a DataDecoder
// types asks for included resources only for the linkage they bring into
// "data" (the API sends a relationship's data only when it is included):
// decoding them with the JSON decoder cost more than the rest of the page's
// decoding besides "data" (BenchmarkDecodePageRest). When the scan fails,
// only "data" is cut, and the JSON decoder reports the error.
func restOf(body []byte, at, n int) []byte {
	cut := make([][2]int, 0, 2) // data and included, in the body's order
	_, ok := jsonscan.Members(body, jsonscan.WS(body, 0), func(key []byte, plain bool, _, v int) (int, bool) {
		if v == at {
			cut = append(cut, [2]int{at, at + n})
			return at + n, true
		}
		end, ok := jsonscan.SkipValue(body, v, 1)
		if ok && plain && string(key) == "included" {
			cut = append(cut, [2]int{v, end})
		}
		return end, ok
	})
	if !ok {
		cut = [][2]int{{at, at + n}}
	}
	size := len(body)
	for _, c := range cut {
		size -= c[1] - c[0] - len("[]")
	}
	rest := make([]byte, 0, size)
	last := 0
	for _, c := range cut {
		rest = append(append(rest, body[last:c[0]]...), "[]"...)
		last = c[1]
	}
	return append(rest, body[last:]...)
}

// unmarshal decodes body into v, making every error a *DecodeError.
func unmarshal(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de
	}
	return &DecodeError{Reason: "invalid document", Err: err}
}

// keepRawOfInvalid attaches the resource object as sent to each primary
// resource holding an invalid id. It decodes "data" a second time, which
// costs only on pages that have such a resource.
func (d *Document) keepRawOfInvalid(body []byte) error {
	bad := false
	for i := range d.Data {
		if _, b := d.Data[i].HasInvalidID(); b {
			bad = true
			break
		}
	}
	if !bad {
		return nil
	}
	var raw []json.RawMessage
	switch d.DataShape {
	case ShapeMany:
		var w struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := unmarshal(body, &w); err != nil {
			return err
		}
		raw = w.Data
	case ShapeOne:
		var w struct {
			Data json.RawMessage `json:"data"`
		}
		if err := unmarshal(body, &w); err != nil {
			return err
		}
		raw = []json.RawMessage{w.Data}
	}
	if len(raw) != len(d.Data) {
		return &DecodeError{Reason: "data changed length on a second decoding"}
	}
	for i := range d.Data {
		if _, b := d.Data[i].HasInvalidID(); b {
			d.Data[i].Raw = raw[i]
		}
	}
	return nil
}

// validate checks what the decoder cannot: every resource and identifier has
// a type.
func (d *Document) validate() error {
	for _, list := range [][]Resource{d.Data, d.Included} {
		for i := range list {
			if err := list[i].validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Resource) validate() error {
	if r.Type == "" {
		return &DecodeError{Reason: "resource without type"}
	}
	for name, rel := range r.Relationships {
		for _, id := range rel.Data.IDs {
			if id.Type == "" {
				return &DecodeError{Reason: "identifier without type in relationship " + quoteShort(name)}
			}
		}
	}
	return nil
}

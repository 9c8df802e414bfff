package jsondoc

import (
	"bytes"
	"math"

	"encoding/json"

	"github.com/usersync/usersync/sync/internal/jsonscan"
)

// Shape says which form a "data" member took: absent, null, one object or an
// array. JSON:API gives each a different meaning (an absent relationship
// linkage is "not sent", a null one is "empty to-one"), so they are kept apart.
type Shape uint8

const (
	// ShapeAbsent means the "data" key was not in the object.
	ShapeAbsent Shape = iota
	// ShapeNull means "data": null.
	ShapeNull
	// ShapeOne means "data" held a single object.
	ShapeOne
	// ShapeMany means "data" held an array, possibly empty.
	ShapeMany
)

// String returns the name of the shape, for messages and tests.
func (s Shape) String() string {
	switch s {
	case ShapeAbsent:
		return "absent"
	case ShapeNull:
		return "null"
	case ShapeOne:
		return "one"
	case ShapeMany:
		return "many"
	}
	return "invalid"
}

// Document is a decoded JSON:API top-level document.
type Document struct {
	// Data holds the primary data: one element when DataShape is ShapeOne,
	// any number when it is ShapeMany, none otherwise.
	Data []Resource
	// DataShape is the form "data" took in the body.
	DataShape Shape
	// Included holds the compound-document resources ("included"). A page
	// whose data a DataDecoder typed leaves them undecoded (nil), their
	// syntax checked.
	Included []Resource
	// Links holds the top-level links; Links.Next drives pagination.
	Links Links
	// Meta is the raw top-level "meta" object, nil when absent.
	Meta json.RawMessage
	// Errors holds the top-level "errors" array.
	Errors []ErrorObject
}

// Resource is one resource object. Attributes and Meta are kept as raw JSON
// so that attributes this package does not know about are never lost; decode
// them into your own struct (or with a streaming parser) where needed.
type Resource struct {
	// ID is the resource id.
	ID ID `json:"id"`
	// Type is the resource type, such as "user".
	Type string `json:"type"`
	// Attributes is the raw "attributes" object, nil when absent.
	Attributes json.RawMessage `json:"attributes"`
	// Relationships maps each relationship name to its object.
	Relationships map[string]Relationship `json:"relationships"`
	// Links holds the resource links (usually "self").
	Links Links `json:"links"`
	// Meta is the raw resource "meta" object (canWrite, dataConnections...).
	Meta json.RawMessage `json:"meta"`
	// Raw is the resource object exactly as sent, kept only for a resource
	// holding an invalid id (its own or a related one), so it can be
	// quarantined whole; nil otherwise.
	Raw json.RawMessage `json:"-"`
}

// HasInvalidID reports whether the resource or one of its relationship
// identifiers carries an id that is not an integer, and which member.
func (r *Resource) HasInvalidID() (member string, bad bool) {
	if !r.ID.Valid() {
		return "id", true
	}
	for name, rel := range r.Relationships {
		for _, id := range rel.Data.IDs {
			if !id.ID.Valid() {
				return "relationships." + name, true
			}
		}
	}
	return "", false
}

// Relationship is one member of a resource's "relationships" object.
type Relationship struct {
	// Data is the resource linkage; its Shape tells the four cases apart.
	Data Linkage `json:"data"`
	// Links holds the relationship links ("self", "related").
	Links Links `json:"links"`
	// Meta is the raw relationship "meta" object.
	Meta json.RawMessage `json:"meta"`
}

// Linkage is the "data" member of a relationship.
//
//   - Shape ShapeAbsent: no "data" key (the server sent only links or meta);
//     the linkage is unknown, not empty.
//   - Shape ShapeNull: "data": null, an empty to-one relationship.
//   - Shape ShapeOne: one identifier object, in IDs[0].
//   - Shape ShapeMany: an array of identifiers, possibly empty.
type Linkage struct {
	// Shape is the form the linkage took.
	Shape Shape
	// IDs holds the identifiers: one for ShapeOne, any number for ShapeMany.
	IDs []Identifier
}

// One returns the identifier of a to-one linkage and true, or false when the
// linkage is not a single identifier.
func (l Linkage) One() (Identifier, bool) {
	if l.Shape != ShapeOne || len(l.IDs) != 1 {
		return Identifier{}, false
	}
	return l.IDs[0], true
}

// Identifier is a resource identifier object: {"id": 1, "type": "team"}.
type Identifier struct {
	// ID is the id of the related resource.
	ID ID `json:"id"`
	// Type is the type of the related resource.
	Type string `json:"type"`
	// Meta is the raw identifier "meta", nil when absent.
	Meta json.RawMessage `json:"meta"`
}

// Links holds the link members this API uses. A link sent as an object
// ({"href": "..."}) is reduced to its href; null or absent is "".
type Links struct {
	// Self is the URL of the object itself.
	Self Link `json:"self"`
	// Related is the URL of a relationship's related resources.
	Related Link `json:"related"`
	// First is the URL of the first page of a collection.
	First Link `json:"first"`
	// Prev is the URL of the previous page of a collection.
	Prev Link `json:"prev"`
	// Next is the URL of the next page of a collection; "" on the last page.
	Next Link `json:"next"`
	// Last is the URL of the last page of a collection.
	Last Link `json:"last"`
}

// Link is a URL from a "links" object.
type Link string

// UnmarshalJSON decodes a relationship's "data" member. The usual forms
// (identifiers holding only "id" and "type") are parsed by hand, which is
// several times faster than a nested decode; anything else goes to the
// JSON decoder.
func (l *Linkage) UnmarshalJSON(b []byte) error {
	if shape, ids, ok := parseLinkage(b); ok {
		l.Shape, l.IDs = shape, ids
		return nil
	}
	return l.decodeAny(b)
}

// decodeAny decodes any form of a relationship's "data" with the JSON
// decoder (BenchmarkLinkage compares it with parseLinkage).
func (l *Linkage) decodeAny(b []byte) error {
	switch firstByte(b) {
	case 'n':
		l.Shape, l.IDs = ShapeNull, nil
		return nil
	case '{':
		ids := make([]Identifier, 1)
		if err := json.Unmarshal(b, &ids[0]); err != nil {
			return err
		}
		l.Shape, l.IDs = ShapeOne, ids
		return nil
	case '[':
		var ids []Identifier
		if err := json.Unmarshal(b, &ids); err != nil {
			return err
		}
		if ids == nil {
			ids = []Identifier{}
		}
		l.Shape, l.IDs = ShapeMany, ids
		return nil
	}
	return &DecodeError{Reason: "relationship data is neither an object, an array nor null"}
}

// UnmarshalJSON accepts a string, null, or a link object with an "href".
func (l *Link) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case 'n':
		*l = ""
		return nil
	case '"':
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
			*l = Link(b[1 : len(b)-1])
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = Link(s)
		return nil
	case '{':
		var obj struct {
			Href string `json:"href"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		*l = Link(obj.Href)
		return nil
	}
	return &DecodeError{Reason: "link is neither a string, an object nor null"}
}

// firstByte returns the first byte of b that is not JSON white space, or 0.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// ID is the integer id of a resource or identifier. The API sends ids as JSON
// numbers; a string holding an integer ("42") is accepted too. Anything else
// decodes as InvalidID rather than failing the whole document: one resource
// with a bad id must not stop a page, it goes to quarantine (see
// Resource.Raw and ID.Valid).
type ID int64

// InvalidID is the value of an id that is neither an integer nor a string
// holding one.
const InvalidID ID = math.MinInt64

// Valid reports whether the id was an integer.
func (id ID) Valid() bool { return id != InvalidID }

// UnmarshalJSON accepts an integer number or a string holding one; anything
// else becomes InvalidID.
func (id *ID) UnmarshalJSON(b []byte) error {
	digits := b
	if len(digits) >= 2 && digits[0] == '"' && digits[len(digits)-1] == '"' {
		digits = digits[1 : len(digits)-1]
	}
	n, ok := jsonscan.ParseInt(digits)
	if !ok || ID(n) == InvalidID {
		*id = InvalidID
		return nil
	}
	*id = ID(n)
	return nil
}

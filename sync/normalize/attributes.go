package normalize

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/internal/jsonscan"
	"github.com/usersync/usersync/sync/jsondoc"
)

// FieldError says which member of a resource could not be typed and why.
type FieldError struct {
	Field  string // the attribute or member, e.g. "locked" or "id"
	Reason string // e.g. "expected boolean, got string"
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Attributes types the attributes of one resource type.
type Attributes struct {
	res   schema.Resource
	index map[string]int // API name → position in res.Attributes
}

// NewAttributes prepares typing for the resource's catalog attributes.
func NewAttributes(res schema.Resource) *Attributes {
	idx := make(map[string]int, len(res.Attributes))
	for i, a := range res.Attributes {
		idx[a.Name] = i
	}
	return &Attributes{res: res, index: idx}
}

// Typed is the result of typing an attributes object.
type Typed struct {
	// Values holds one value per catalog attribute, in catalog order, ready
	// for COPY: int64, bool, string, time.Time, []byte (JSON, for jsonb), or
	// nil for null and for attributes the API did not send.
	Values []any
	// Unknown lists the attributes the catalog does not know (schema drift).
	Unknown []string
	// Rest is a JSON object of the attributes the catalog does not know,
	// exactly as sent ({} when none): with the typed values it holds every
	// attribute the API sent.
	Rest []byte
}

// Type types raw, a JSON attributes object (or null/absent: all values nil).
// It returns a *FieldError for the first value of the wrong JSON type.
func (a *Attributes) Type(raw []byte) (Typed, error) {
	t := Typed{Values: make([]any, len(a.res.Attributes)), Rest: []byte("{}")}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return t, nil
	}
	t.Rest = nil
	if raw[0] != '{' {
		return t, &FieldError{Field: "attributes", Reason: "expected an object"}
	}
	var ferr error
	gjson.ParseBytes(raw).ForEach(func(key, value gjson.Result) bool {
		i, ok := a.index[key.Str]
		if !ok {
			// Kept in raw, a jsonb column.
			if reason := unstorableJSON(key.Raw); reason != "" {
				ferr = &FieldError{Field: "attributes", Reason: "an attribute name " + reason}
				return false
			}
			if reason := unstorableJSON(value.Raw); reason != "" {
				ferr = &FieldError{Field: storableName(key.Str), Reason: reason}
				return false
			}
			t.Unknown = append(t.Unknown, key.Str)
			if len(t.Rest) == 0 {
				t.Rest = append(t.Rest, '{')
			} else {
				t.Rest = append(t.Rest, ',')
			}
			t.Rest = append(append(append(t.Rest, key.Raw...), ':'), value.Raw...)
			return true
		}
		attr := a.res.Attributes[i]
		v, err := typeValue(attr, value)
		if err != nil {
			ferr = err
			return false
		}
		t.Values[i] = v
		return true
	})
	if len(t.Rest) == 0 {
		t.Rest = []byte("{}")
	} else {
		t.Rest = append(t.Rest, '}')
	}
	return t, ferr
}

func typeValue(attr schema.Attribute, v gjson.Result) (any, error) {
	if v.Type == gjson.Null {
		return nil, nil
	}
	wrong := func() error {
		return &FieldError{Field: attr.Name, Reason: "expected " + attr.Type.String() + ", got " + jsonKind(v)}
	}
	switch attr.Type {
	case schema.Integer:
		if v.Type != gjson.Number {
			return nil, wrong()
		}
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		if err != nil {
			return nil, &FieldError{Field: attr.Name, Reason: "expected integer, got a number that is not a 64-bit integer"}
		}
		return n, nil
	case schema.Boolean:
		switch v.Type {
		case gjson.True:
			return true, nil
		case gjson.False:
			return false, nil
		}
		return nil, wrong()
	case schema.String:
		if v.Type != gjson.String {
			return nil, wrong()
		}
		// A lone surrogate escape decodes to U+FFFD, which text holds.
		if reason := unstorableText(v.Str); reason != "" {
			return nil, &FieldError{Field: attr.Name, Reason: reason}
		}
		return v.Str, nil
	case schema.DateTime:
		if v.Type != gjson.String {
			return nil, wrong()
		}
		ts, err := ParseTime(v.Str)
		if err != nil {
			return nil, &FieldError{Field: attr.Name, Reason: "expected an ISO 8601 date-time"}
		}
		return ts, nil
	case schema.Object:
		// The API documents an object; a collection sent as an array is kept as is.
		if v.Type != gjson.JSON {
			return nil, wrong()
		}
		if reason := unstorableJSON(v.Raw); reason != "" {
			return nil, &FieldError{Field: attr.Name, Reason: reason}
		}
		return []byte(v.Raw), nil
	}
	return nil, fmt.Errorf("normalize: attribute %s has unknown type %v", attr.Name, attr.Type)
}

func jsonKind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.JSON:
		if len(v.Raw) > 0 && v.Raw[0] == '[' {
			return "array"
		}
		return "object"
	}
	return "null"
}

// ParseTime parses an API date-time (RFC 3339, with or without fractional
// seconds) into UTC, truncated to the microsecond PostgreSQL keeps.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// MaxNesting bounds the depth of a resource object (1 for the object
// itself): the JSON decoder refuses documents nested some 10,000 levels
// deep, and PostgreSQL's jsonb parser runs out of stack not far beyond. A
// resource nested deeper is rejected whole, never the page holding it.
const MaxNesting = 1000

// tooDeep rejects a resource object nested deeper than MaxNesting, naming
// the member (and the attribute) that is. The resource keeps its id and
// type where they can be read, and raw, which the quarantine stores.
func tooDeep(raw []byte) Rejected {
	res := jsondoc.Resource{ID: jsondoc.InvalidID, Raw: append([]byte(nil), raw...)}
	obj := gjson.ParseBytes(raw)
	if id := obj.Get("id"); id.Exists() {
		_ = res.ID.UnmarshalJSON([]byte(id.Raw))
	}
	res.Type = obj.Get("type").String()
	field := "resource"
	obj.ForEach(func(key, value gjson.Result) bool {
		if _, depth, _, _ := jsonscan.SkipNested([]byte(value.Raw), 0); depth+1 <= MaxNesting {
			return true
		}
		field = storableName(key.Str)
		if key.Str == "attributes" {
			value.ForEach(func(k, v gjson.Result) bool {
				if _, depth, _, _ := jsonscan.SkipNested([]byte(v.Raw), 0); depth+2 > MaxNesting {
					field = storableName(k.Str)
					return false
				}
				return true
			})
		}
		return false
	})
	return Rejected{Resource: res, Err: &FieldError{Field: field, Reason: fmt.Sprintf("nested deeper than %d levels", MaxNesting)}}
}

// storableName returns a member name as it can be named in a FieldError
// (stored in PostgreSQL text and logged): NULs and bytes that are not UTF-8
// replaced, at most 128 bytes.
func storableName(name string) string {
	name = strings.ToValidUTF8(strings.ReplaceAll(name, "\x00", "\uFFFD"), "\uFFFD")
	if len(name) > 128 {
		cut := 125
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "..."
	}
	return name
}

// Why a value cannot be stored, as FieldError reasons.
const (
	reasonNUL       = `holds a NUL character (\u0000), which PostgreSQL cannot store`
	reasonUTF8      = "holds bytes that are not UTF-8, which PostgreSQL cannot store"
	reasonSurrogate = `holds a UTF-16 surrogate escape (\ud800-\udfff) not in a pair, which PostgreSQL cannot store in jsonb`
)

// unstorableText says why PostgreSQL cannot store s as text, or "".
func unstorableText(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return reasonNUL
	case !utf8.ValidString(s):
		return reasonUTF8
	}
	return ""
}

// unstorableJSON says why PostgreSQL cannot store the JSON value raw (kept
// as sent) as jsonb, or "": a string in it holds \u0000, bytes that are not
// UTF-8 or a lone surrogate escape.
func unstorableJSON(raw string) string {
	b := []byte(raw)
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end, _, _, bad, ok := jsonscan.ScanString(b, i)
		if !ok {
			return "" // not JSON: left to the decoder
		}
		if bad {
			str := b[i+1 : end-1]
			switch {
			case bytes.Contains(str, []byte(`\u0000`)):
				return reasonNUL
			case !utf8.Valid(str):
				return reasonUTF8
			}
			return reasonSurrogate
		}
		i = end - 1
	}
	return ""
}

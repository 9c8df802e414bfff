package normalize

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsondoc"
)

// MembershipRelationship is the to-many relationship of a user stored in
// user_teams; every other linkage goes to user_relationships.
const MembershipRelationship = "teams"

// ToOne is a to-one relationship's value.
type ToOne struct {
	ID    int64 // the related id, when Valid
	Valid bool  // the linkage held an identifier ("data": {...})
	Sent  bool  // the linkage was sent at all; false keeps the stored value
}

// Link is one element of a to-many (or unknown) relationship.
type Link struct {
	Relationship string
	Type         string
	ID           int64
}

// Row is one resource, typed for the warehouse.
type Row struct {
	ID        int64
	Values    []any    // catalog attributes, in catalog order (see Typed.Values)
	Unknown   []string // attribute names the catalog does not know
	ToOne     []ToOne  // the catalog's to-one relationships, in catalog order
	TeamsSent bool     // the membership linkage was sent (else: fetch per team)
	Teams     []int64  // team ids, when TeamsSent
	LinksSent []string // relationships (other than teams and catalog to-ones) whose linkage was sent
	Links     []Link   // their elements
	Raw       []byte   // the attributes the catalog does not know, as sent ({} when none)
	UpdatedAt time.Time

	// DataConnections is meta.dataConnections as sent (JSON), when
	// DataConnectionsSent; otherwise the stored value is kept.
	DataConnections     []byte
	DataConnectionsSent bool
	// CanWrite is meta.canWrite: whether the API user may write this
	// resource; nil when not sent.
	CanWrite *bool
}

// Normalizer maps resources of one catalog type to rows.
type Normalizer struct {
	res     schema.Resource
	attrs   *Attributes
	toOne   map[string]int // relationship name → index in ToOne
	updated int            // index of updatedAt in the attributes, or -1
	policy  *Policy        // the personal-data policy; nil keeps everything
}

// New returns a Normalizer for the catalog resource res.
func New(res schema.Resource) *Normalizer {
	n := &Normalizer{res: res, attrs: NewAttributes(res), toOne: map[string]int{}, updated: -1}
	for i, rel := range res.ToOne() {
		n.toOne[rel.Name] = i
	}
	for i, a := range res.Attributes {
		if a.Name == "updatedAt" {
			n.updated = i
		}
	}
	return n
}

// SetPolicy makes the Normalizer apply the personal-data policy p (built for
// its resource) to every row it types, on both decoding paths.
func (n *Normalizer) SetPolicy(p *Policy) { n.policy = p }

// Resource returns the catalog resource the Normalizer maps.
func (n *Normalizer) Resource() schema.Resource { return n.res }

// Row types r. A *FieldError says what could not be typed; the caller
// quarantines the resource and goes on.
func (n *Normalizer) Row(r jsondoc.Resource) (Row, error) {
	if r.Type != "" && r.Type != n.res.Type {
		return Row{}, &FieldError{Field: "type", Reason: "expected " + n.res.Type + ", got another type"}
	}
	if member, bad := r.HasInvalidID(); bad {
		if member == "id" {
			return Row{}, &FieldError{Field: "id", Reason: "id is not an integer"}
		}
		return Row{}, &FieldError{Field: member, Reason: "a related id is not an integer"}
	}
	typed, err := n.attrs.Type(r.Attributes)
	if err != nil {
		return Row{}, err
	}
	row := Row{ID: int64(r.ID), Values: typed.Values, Unknown: typed.Unknown, Raw: typed.Rest,
		ToOne: make([]ToOne, len(n.toOne))}
	if n.updated >= 0 {
		if t, ok := row.Values[n.updated].(time.Time); ok {
			row.UpdatedAt = t
		}
	}
	if err := readMeta(&row, r.Meta); err != nil {
		return Row{}, err
	}
	names := make([]string, 0, len(r.Relationships))
	for name := range r.Relationships {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic Links order
	for _, name := range names {
		// Names and types of the linkage are stored (other_relationships).
		// (The single pass takes them only in plain ASCII.)
		if reason := unstorableText(name); reason != "" {
			return Row{}, &FieldError{Field: "relationships", Reason: "a relationship name " + reason}
		}
		for _, id := range r.Relationships[name].Data.IDs {
			if reason := unstorableText(id.Type); reason != "" {
				return Row{}, &FieldError{Field: "relationships." + storableName(name), Reason: "an identifier type " + reason}
			}
		}
		if err := n.relationship(&row, name, r.Relationships[name].Data); err != nil {
			return Row{}, err
		}
	}
	n.policy.Apply(&row)
	return row, nil
}

func (n *Normalizer) relationship(row *Row, name string, data jsondoc.Linkage) error {
	if i, ok := n.toOne[name]; ok {
		switch data.Shape {
		case jsondoc.ShapeAbsent:
		case jsondoc.ShapeNull:
			row.ToOne[i] = ToOne{Sent: true}
		case jsondoc.ShapeOne:
			row.ToOne[i] = ToOne{ID: int64(data.IDs[0].ID), Valid: true, Sent: true}
		default:
			return &FieldError{Field: "relationships." + name, Reason: "expected one identifier or null, got an array"}
		}
		return nil
	}
	if data.Shape == jsondoc.ShapeAbsent {
		return nil // linkage not sent: the stored one stays
	}
	if name == MembershipRelationship && n.res.Type == "user" {
		if data.Shape == jsondoc.ShapeOne {
			return &FieldError{Field: "relationships.teams", Reason: "expected an array of identifiers, got one"}
		}
		row.TeamsSent = true
		row.Teams = make([]int64, 0, len(data.IDs))
		for _, id := range data.IDs {
			row.Teams = append(row.Teams, int64(id.ID))
		}
		return nil
	}
	row.LinksSent = append(row.LinksSent, name)
	for _, id := range data.IDs {
		row.Links = append(row.Links, Link{Relationship: name, Type: id.Type, ID: int64(id.ID)})
	}
	return nil
}

// readMeta takes dataConnections and canWrite from a resource's meta.
func readMeta(row *Row, meta []byte) error {
	if len(meta) == 0 {
		return nil
	}
	m := gjson.ParseBytes(meta)
	if !m.IsObject() {
		return &FieldError{Field: "meta", Reason: "expected an object"}
	}
	if dc := m.Get("dataConnections"); dc.Exists() {
		if reason := unstorableJSON(dc.Raw); reason != "" {
			return &FieldError{Field: "meta.dataConnections", Reason: reason}
		}
		row.DataConnectionsSent = true
		if dc.Type != gjson.Null {
			row.DataConnections = []byte(dc.Raw)
		}
	}
	switch cw := m.Get("canWrite"); cw.Type {
	case gjson.True, gjson.False:
		b := cw.Bool()
		row.CanWrite = &b
	case gjson.Null:
	default:
		return &FieldError{Field: "meta.canWrite", Reason: "expected boolean, got another type"}
	}
	return nil
}

// Hash is the content hash of a row as the warehouse stores it (see
// ContentHash): two rows with the same hash are the same version. It is
// computed at each call, because a copy of the row may differ.
func (r *Row) Hash() []byte {
	return ContentHash(r.Values, r.Raw, r.ToOne, r.DataConnections)
}

// ContentHash is SHA-256 over a user's stored content (the typed values, the
// unknown attributes, the to-one ids and the data connections, JSON in
// canonical form) and of nothing else, so the warehouse can recompute it from
// a stored row and it reveals no value the policy hashed, dropped or erased.
func ContentHash(values []any, raw []byte, toOne []ToOne, dataConnections []byte) []byte {
	// One buffer of about the encoding's size: the canonical JSON's
	// recursion moves any buffer to the heap, so a stack array would only
	// be copied there.
	size := 64 + len(raw) + len(dataConnections) + 9*(len(values)+len(toOne))
	for _, v := range values {
		switch v := v.(type) {
		case string:
			size += len(v)
		case []byte:
			size += len(v) + 4
		}
	}
	b := append(make([]byte, 0, size), contentHashVersion)
	for _, v := range values {
		b = appendHashValue(b, v)
	}
	b = appendHashJSON(b, raw)
	if dataConnections != nil {
		b = appendHashJSON(append(b, 2), dataConnections)
	} else {
		b = append(b, 0)
	}
	for _, t := range toOne {
		valid := byte(0)
		if t.Valid {
			valid = 1
		}
		b = binary.BigEndian.AppendUint64(append(b, valid), uint64(t.ID))
	}
	sum := sha256.Sum256(b)
	return append(make([]byte, 0, sha256.Size), sum[:]...)
}

// contentHashVersion starts every ContentHash input: a hash of another
// construction never equals one of this.
const contentHashVersion = 2

// appendHashValue appends one typed value, tagged with its kind and, for
// the variable-length ones, prefixed with its length.
func appendHashValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 0)
	case string:
		return append(binary.BigEndian.AppendUint32(append(b, 1), uint32(len(v))), v...)
	case int64:
		return binary.BigEndian.AppendUint64(append(b, 2), uint64(v))
	case bool:
		if v {
			return append(b, 3, 1)
		}
		return append(b, 3, 0)
	case time.Time:
		return binary.BigEndian.AppendUint64(append(b, 4), uint64(v.UnixMicro()))
	case []byte:
		return appendHashJSON(append(b, 5), v)
	}
	// typeValue returns none other; the warehouse refuses to write such a
	// value (naming its column), so its hash only needs to be defined.
	return fmt.Appendf(append(b, 6), "%T %v;", v, v)
}

// appendHashJSON appends a JSON value in canonical form, its length (four
// bytes) first.
func appendHashJSON(b, v []byte) []byte {
	if string(v) == "{}" {
		return append(b, 0, 0, 0, 2, '{', '}')
	}
	at := len(b)
	b = appendCanonical(append(b, 0, 0, 0, 0), v)
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// LinkageHash is the hash of the to-many linkage the row carries: teams
// (whether sent, and the set), and every other relationship sent with its
// elements. The warehouse skips the linkage of users whose hash it already
// holds. It is computed at each call, as Hash is.
func (r *Row) LinkageHash() []byte {
	// The linkage is gathered in one buffer (on the stack for a usual user)
	// and hashed at once: a Write per piece costs more than the hashing.
	var buf [1024]byte
	b := buf[:0]
	if r.TeamsSent {
		var tbuf [16]int64
		teams := append(tbuf[:0], r.Teams...)
		slices.Sort(teams)
		b = append(b, "teams"...)
		for _, t := range teams {
			b = binary.BigEndian.AppendUint64(b, uint64(t))
		}
	}
	for _, name := range r.LinksSent {
		b = append(append(b, 0), name...)
	}
	for _, l := range r.Links {
		b = append(append(append(append(b, 1), l.Relationship...), 0), l.Type...)
		b = binary.BigEndian.AppendUint64(b, uint64(l.ID))
	}
	sum := sha256.Sum256(b)
	return append(make([]byte, 0, sha256.Size), sum[:]...)
}

// erasedPrefix starts the content hash usersync forget leaves on a row it
// clears (ErasedHash): no SHA-256 output is expected to start with it.
const erasedPrefix = "usersync:erased\x00"

// ErasedHash is the content hash of a row cleared by usersync forget: it
// holds only the user's updatedAt, so a sync that reads the same version
// again leaves the row cleared while a changed user is written again.
func ErasedHash(updatedAt time.Time) []byte {
	b := append(make([]byte, 0, sha256.Size), erasedPrefix...)
	b = binary.BigEndian.AppendUint64(b, uint64(updatedAt.UnixMicro()))
	return append(b, make([]byte, sha256.Size-len(b))...)
}

// ErasedAt reports whether hash is an ErasedHash, and its updatedAt.
func ErasedAt(hash []byte) (time.Time, bool) {
	if len(hash) != sha256.Size || string(hash[:len(erasedPrefix)]) != erasedPrefix {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(hash[len(erasedPrefix):]))).UTC(), true
}

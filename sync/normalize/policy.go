package normalize

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"

	"github.com/agnivade/levenshtein"
	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
)

// MinKeyBytes is the shortest key a Policy hashes with: an HMAC-SHA256 key
// shorter than the hash gives less than its strength.
const MinKeyBytes = 32

// Policy is the personal-data policy of the users resource, applied to a row
// before anything is written: attributes stored as a keyed hash (so equal
// values still join) or not at all, and whether unknown attributes stay out
// of raw. A nil *Policy keeps everything.
type Policy struct {
	res         schema.Resource
	hash, drop  []int // indexes in res.Attributes, in catalog order
	dropUnknown bool
	key         []byte
	macs        sync.Pool // of hash.Hash: HMAC-SHA256 under key, reused (BenchmarkDecodeDataPolicy)
}

// PolicyConfig names a Policy's attributes, by API name ("phoneNumber") or
// column name ("phone_number").
type PolicyConfig struct {
	Hash, Drop  []string
	DropUnknown bool
	Key         []byte // the HMAC key; required with Hash, at least MinKeyBytes
}

// PolicyError says which part of a PolicyConfig is wrong: List is "hash",
// "drop" or "key". It never holds the key.
type PolicyError struct {
	List   string
	Reason string
}

func (e *PolicyError) Error() string { return e.Reason }

// NewPolicy validates cfg against the catalog resource res and returns its
// Policy, or nil when cfg keeps everything.
func NewPolicy(res schema.Resource, cfg PolicyConfig) (*Policy, error) {
	p := &Policy{res: res, dropUnknown: cfg.DropUnknown}
	seen := map[int]string{}
	for _, l := range []struct {
		name  string
		names []string
		dst   *[]int
	}{{"hash", cfg.Hash, &p.hash}, {"drop", cfg.Drop, &p.drop}} {
		for _, name := range l.names {
			i, err := attributeIndex(res, name)
			if err != nil {
				return nil, &PolicyError{List: l.name, Reason: err.Error()}
			}
			a := res.Attributes[i]
			if other, ok := seen[i]; ok && other != l.name {
				return nil, &PolicyError{List: l.name, Reason: fmt.Sprintf("%s is in both the hash and the drop lists; name it in one", a.Name)}
			}
			if a.Name == "updatedAt" {
				// updatedAt drives incremental syncs and reconciles.
				return nil, &PolicyError{List: l.name, Reason: a.Name + " is needed to sync and cannot be hashed or dropped"}
			}
			if l.name == "hash" && a.Type != schema.String {
				return nil, &PolicyError{List: "hash", Reason: fmt.Sprintf("%s holds %s values; only text attributes can be hashed (drop it instead)", a.Name, a.Type)}
			}
			if _, ok := seen[i]; !ok {
				seen[i] = l.name
				*l.dst = append(*l.dst, i)
			}
		}
	}
	slices.Sort(p.hash)
	slices.Sort(p.drop)
	switch {
	case len(p.hash) > 0 && len(cfg.Key) == 0:
		return nil, &PolicyError{List: "key", Reason: "attributes to hash need a key"}
	case len(cfg.Key) > 0 && len(cfg.Key) < MinKeyBytes:
		return nil, &PolicyError{List: "key", Reason: fmt.Sprintf("is shorter than %d bytes", MinKeyBytes)}
	}
	p.key = slices.Clone(cfg.Key)
	if len(p.hash) == 0 && len(p.drop) == 0 && !p.dropUnknown {
		return nil, nil
	}
	return p, nil
}

// attributeIndex finds an attribute by API or column name; the error names
// the closest attribute.
func attributeIndex(res schema.Resource, name string) (int, error) {
	for i, a := range res.Attributes {
		if a.Name == name || a.Column() == name {
			return i, nil
		}
	}
	best, bestDist := "", -1
	for _, a := range res.Attributes {
		for _, c := range []string{a.Name, a.Column()} {
			if d := levenshtein.ComputeDistance(strings.ToLower(name), strings.ToLower(c)); bestDist < 0 || d < bestDist {
				best, bestDist = a.Name, d
			}
		}
	}
	return 0, fmt.Errorf("%q is not a %s attribute (did you mean %s?)", storableName(name), res.Type, best)
}

// Hashed and Dropped return the API names of the policy's attributes, in
// catalog order.
func (p *Policy) Hashed() []string {
	if p == nil {
		return nil
	}
	return p.names(p.hash)
}

// Dropped returns the API names of the dropped attributes (see Hashed).
func (p *Policy) Dropped() []string {
	if p == nil {
		return nil
	}
	return p.names(p.drop)
}

func (p *Policy) names(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = p.res.Attributes[i].Name
	}
	return out
}

// HashedColumns and DroppedColumns return the column names of the
// policy's attributes, in catalog order.
func (p *Policy) HashedColumns() []string { return columns(p.Hashed()) }

// DroppedColumns returns the column names of the dropped attributes.
func (p *Policy) DroppedColumns() []string { return columns(p.Dropped()) }

func columns(names []string) []string {
	for i, n := range names {
		names[i] = schema.ColumnName(n)
	}
	return names
}

// DropUnknown says whether attributes the catalog does not know stay out
// of raw.
func (p *Policy) DropUnknown() bool { return p != nil && p.dropUnknown }

// KeyID identifies the key without revealing it: the first 16 hex digits of
// an HMAC of a constant under the key; "" without a key.
func (p *Policy) KeyID() string {
	if p == nil || len(p.key) == 0 {
		return ""
	}
	return p.HashString("usersync-key-id")[:16]
}

// Fingerprint is the policy in one line, names and key id only: equal
// fingerprints rewrite rows the same way. "none" for a nil Policy.
func (p *Policy) Fingerprint() string {
	if p == nil {
		return "none"
	}
	unknown := "keep"
	if p.dropUnknown {
		unknown = "drop"
	}
	s := "hash=" + strings.Join(p.Hashed(), ",") + " drop=" + strings.Join(p.Dropped(), ",") + " unknown=" + unknown
	if id := p.KeyID(); id != "" {
		s += " key=" + id
	}
	return s
}

// HashString is the stored form of a hashed value: HMAC-SHA256 under the
// policy's key, in lower-case hex.
func (p *Policy) HashString(v string) string {
	m, ok := p.macs.Get().(hash.Hash)
	if !ok {
		m = hmac.New(sha256.New, p.key)
	}
	m.Reset()
	m.Write([]byte(v))
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], m.Sum(sum[:0]))
	p.macs.Put(m)
	return string(out[:])
}

// LooksHashed says whether a stored value has the shape of a hash (64
// lower-case hex digits). Only usersync pii apply uses it, for rows written
// before each row recorded its policy, where the shape is all there is to go
// on.
func LooksHashed(v string) bool {
	if len(v) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Apply rewrites a row sent by the API to the policy: hashed values replaced
// by their hash, dropped ones by null, and raw emptied when unknown
// attributes are dropped. Row.Hash is taken after it, so the content hash
// never covers a value the policy keeps out of the warehouse.
func (p *Policy) Apply(row *Row) {
	if p == nil {
		return
	}
	for _, i := range p.hash {
		if s, ok := row.Values[i].(string); ok {
			row.Values[i] = p.HashString(s)
		}
	}
	for _, i := range p.drop {
		row.Values[i] = nil
	}
	if p.dropUnknown {
		row.Raw = []byte("{}")
	}
}

// errNotObject is why a resource is redacted whole.
var errNotObject = errors.New("not a JSON object")

// RedactResource rewrites a resource object sent by the API to the policy
// before it is quarantined, so a refused resource keeps no personal data that
// a stored row would not. A resource whose attributes are not an object keeps
// none; a nil Policy returns raw.
func (p *Policy) RedactResource(raw []byte) []byte { return p.RedactStored(raw, nil) }

// RedactStored is RedactResource for a resource already in quarantine: a
// value for which hashed(name, value) is true is taken for a hash and kept,
// since only the caller knows which policy stored it. A nil hashed hashes
// every value.
func (p *Policy) RedactStored(raw []byte, hashed func(name string, value gjson.Result) bool) []byte {
	if p == nil {
		return raw
	}
	out, err := p.redact(raw, hashed)
	if err != nil {
		return []byte(`{"attributes":null,"redacted":"` + err.Error() + `"}`)
	}
	return out
}

func (p *Policy) redact(raw []byte, hashed func(string, gjson.Result) bool) ([]byte, error) {
	if !gjson.ValidBytes(raw) {
		return nil, errNotObject
	}
	doc := gjson.ParseBytes(raw)
	if !doc.IsObject() {
		return nil, errNotObject
	}
	out := []byte{'{'}
	doc.ForEach(func(key, value gjson.Result) bool {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, key.Raw...), ':')
		if key.Str != "attributes" {
			out = append(out, value.Raw...)
			return true
		}
		if !value.IsObject() {
			out = append(out, "null"...)
			return true
		}
		out = p.redactAttributes(out, value, hashed)
		return true
	})
	return append(out, '}'), nil
}

// redactAttributes appends the attributes object attrs redacted to out
// (hashed as for RedactStored).
func (p *Policy) redactAttributes(out []byte, attrs gjson.Result, hashed func(string, gjson.Result) bool) []byte {
	out = append(out, '{')
	first := true
	attrs.ForEach(func(key, value gjson.Result) bool {
		i := slices.IndexFunc(p.res.Attributes, func(a schema.Attribute) bool { return a.Name == key.Str })
		switch {
		case i < 0 && p.dropUnknown, slices.Contains(p.drop, i):
			return true
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(append(out, key.Raw...), ':')
		if i < 0 || !slices.Contains(p.hash, i) || value.Type == gjson.Null || (hashed != nil && hashed(key.Str, value)) {
			out = append(out, value.Raw...)
			return true
		}
		text := value.Raw
		if value.Type == gjson.String {
			text = value.Str
		}
		out = append(append(append(out, '"'), p.HashString(text)...), '"')
		return true
	})
	return append(out, '}')
}

package syncer

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
	"github.com/usersync/usersync/sync/warehouse"
)

// listDigest accumulates the digest of one dimension list: SHA-256 over
// one entry per resource listed (its id and the hash of what would be
// stored of it, or of its quarantine record), in id order, and over what
// else decides the rows written (the catalog's columns, the personal-data
// policy). Two lists with the same digest write the same rows, so the one
// applied last stands for the other.
type listDigest struct {
	head    []byte
	entries []digestEntry
	typed   map[int64]bool // ids typed, for the unchanged count
	bad     int64          // resources quarantined
}

// digestEntry is one resource of the list; seq keeps the arrival order of
// an id listed twice, which decides the row kept.
type digestEntry struct {
	id  int64
	seq int
	sum [sha256.Size]byte
}

// digestVersion starts every digest: one of another construction never
// equals one of this.
const digestVersion = "usersync dimension list 1"

func newListDigest(res schema.Resource, policyID int64) *listDigest {
	h := append([]byte(digestVersion), 0)
	h = binary.BigEndian.AppendUint64(h, uint64(policyID))
	for _, a := range res.Attributes {
		h = appendString(h, a.Name)
	}
	for _, rel := range res.ToOne() {
		h = appendString(h, rel.Name)
	}
	return &listDigest{head: h, typed: map[int64]bool{}}
}

// addRow notes a typed resource.
func (d *listDigest) addRow(r *normalize.Row) {
	b := append([]byte{1}, normalize.ContentHash(r.Values, r.Raw, r.ToOne, r.DataConnections)...)
	for _, t := range r.ToOne {
		b = append(b, boolByte(t.Sent))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(r.UpdatedAt.UnixMicro()))
	b = append(b, boolByte(r.UpdatedAt.IsZero()), boolByte(r.TeamsSent))
	for _, t := range r.Teams {
		b = binary.BigEndian.AppendUint64(b, uint64(t))
	}
	for _, l := range r.LinksSent {
		b = appendString(b, l)
	}
	for _, l := range r.Links {
		b = binary.BigEndian.AppendUint64(appendString(appendString(b, l.Relationship), l.Type), uint64(l.ID))
	}
	d.typed[r.ID] = true
	d.add(r.ID, b)
}

// addBad notes a quarantined resource of id.
func (d *listDigest) addBad(id int64, q warehouse.Quarantined) {
	d.bad++
	q = q.Storable()
	b := appendString(appendString(appendString(appendString([]byte{2}, q.Type), q.ID), q.Field), q.Error)
	d.add(id, append(b, q.Raw...))
}

func (d *listDigest) add(id int64, b []byte) {
	d.entries = append(d.entries, digestEntry{id: id, seq: len(d.entries), sum: sha256.Sum256(b)})
}

// sum returns the digest of the list noted so far.
func (d *listDigest) sum() []byte {
	slices.SortFunc(d.entries, func(a, b digestEntry) int {
		return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.seq, b.seq))
	})
	h := sha256.New()
	h.Write(d.head)
	var b []byte
	for _, e := range d.entries {
		b = binary.BigEndian.AppendUint64(b[:0], uint64(e.id))
		h.Write(append(b, e.sum[:]...))
	}
	return h.Sum(nil)
}

// sameAs says whether the list's digest is stored, the one of the list
// applied last.
func (d *listDigest) sameAs(stored []byte) bool {
	return stored != nil && bytes.Equal(d.sum(), stored)
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

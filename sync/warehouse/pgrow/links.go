package pgrow

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
)

// Links maps a user's to-many linkage (besides teams) to the columns of
// its users row: one bigint[] per relationship of the catalog
// (schema.Resource.ArrayLinks) and other_relationships for the rest.
type Links struct {
	index map[string]int // relationship name → array column
	types []string       // the catalog's related type of each array column
}

// NewLinks returns the linkage columns of res (users) from the catalog.
func NewLinks(res schema.Resource) Links {
	l := Links{index: map[string]int{}}
	for i, rel := range res.ArrayLinks() {
		l.index[rel.Name] = i
		l.types = append(l.types, rel.RelatedType)
	}
	return l
}

// otherLink is one element of other_relationships.
type otherLink struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
}

// LinkValues is a row's linkage as COPY writes it.
type LinkValues struct {
	Arrays [][]int64 // ids per array column, nil (NULL) when not sent
	Other  []byte    // other_relationships JSON, nil (NULL) when none
}

// Values returns the linkage columns of row: for each relationship sent, its
// ids of the catalog's type without repeats, in the order sent; identifiers of
// another type, and relationships the catalog does not know, in
// other_relationships.
func (l Links) Values(row *normalize.Row) LinkValues {
	v := LinkValues{Arrays: make([][]int64, len(l.types))}
	ids := v.Arrays
	var other map[string][]otherLink
	for _, name := range row.LinksSent {
		if i, ok := l.index[name]; ok {
			ids[i] = []int64{}
			continue
		}
		if other == nil {
			other = map[string][]otherLink{}
		}
		other[name] = []otherLink{}
	}
	for _, link := range row.Links {
		if i, ok := l.index[link.Relationship]; ok && link.Type == l.types[i] {
			if !slices.Contains(ids[i], link.ID) {
				ids[i] = append(ids[i], link.ID)
			}
			continue
		}
		if other == nil {
			other = map[string][]otherLink{}
		}
		e := otherLink{Type: link.Type, ID: link.ID}
		if !slices.Contains(other[link.Relationship], e) {
			other[link.Relationship] = append(other[link.Relationship], e)
		}
	}
	if len(other) > 0 {
		b, err := json.Marshal(other) // map keys sorted: the same linkage, the same text
		if err == nil {
			v.Other = b
		}
	}
	return v
}

// KeepUnsent returns row with the stored linkage of the relationships it did
// not send added, so that "not sent" keeps what the warehouse holds: arrays
// (one per column, nil when the column is NULL) and other_relationships as
// stored. The returned row's LinksSent and Links are new slices when they
// change.
func (l Links) KeepUnsent(row normalize.Row, arrays [][]int64, other []byte) normalize.Row {
	sent := map[string]bool{}
	for _, name := range row.LinksSent {
		sent[name] = true
	}
	var names []string
	var added []normalize.Link
	for name, i := range l.index {
		if sent[name] || i >= len(arrays) || arrays[i] == nil {
			continue
		}
		names = append(names, name)
		for _, id := range arrays[i] {
			added = append(added, normalize.Link{Relationship: name, Type: l.types[i], ID: id})
		}
	}
	if len(other) > 0 {
		var stored map[string][]otherLink
		if err := json.Unmarshal(other, &stored); err == nil {
			for name, links := range stored {
				if sent[name] {
					continue
				}
				if !slices.Contains(names, name) { // also an array column's: elements of another type
					names = append(names, name)
				}
				for _, e := range links {
					added = append(added, normalize.Link{Relationship: name, Type: e.Type, ID: e.ID})
				}
			}
		}
	}
	if len(names) == 0 {
		return row
	}
	// The order normalize gives: relationships by name, elements in order
	// (the array's, then other_relationships').
	row.LinksSent = append(slices.Clone(row.LinksSent), names...)
	row.Links = append(slices.Clone(row.Links), added...)
	sort.Strings(row.LinksSent)
	sort.SliceStable(row.Links, func(i, j int) bool { return row.Links[i].Relationship < row.Links[j].Relationship })
	return row
}

// SentAll reports whether row sent every relationship that has an array
// column.
func (l Links) SentAll(row *normalize.Row) bool {
	n := 0
	for _, name := range row.LinksSent {
		if _, ok := l.index[name]; ok {
			n++
		}
	}
	return n == len(l.types)
}

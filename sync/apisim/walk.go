package apisim

import "slices"

// The fast path of selecting a page: users sorted by id or updatedAt walk
// the id space or the (updatedAt, id) index from the cursor's position.

// fastPath tells whether the query can walk an index.
func (sel *selector) fastPath() bool {
	q := sel.q
	if q.t.kind != kindUser || len(q.sorts) != 1 || sel.idList() != nil {
		return false
	}
	name := q.sorts[0].f.name
	return name == "id" || name == "updatedAt"
}

// fastPage selects a page by walking the id space or the updatedAt index.
func (sel *selector) fastPage(wantCount bool) pageResult {
	q := sel.q
	res := pageResult{count: -1, ids: make([]uint32, 0, q.size)}
	skip := q.offset
	var afterKeys []key
	afterID := uint32(0)
	if q.after != nil {
		afterKeys, _ = q.afterKeys()
		afterID = uint32(q.after.ID)
	}
	sel.walk(afterKeys, afterID, func(id uint32) bool {
		if skip > 0 {
			skip--
			return true
		}
		if len(res.ids) == q.size {
			res.hasNext = true
			return false
		}
		res.ids = append(res.ids, id)
		return true
	})
	if n := len(res.ids); n > 0 {
		res.lastKeys = []key{sel.key(res.ids[n-1], q.sorts[0].f)}
	}
	if wantCount {
		res.count = 0
		sel.walk(nil, 0, func(uint32) bool { res.count++; return true })
	}
	return res
}

// walk calls fn for each matching user in sort order after the cursor
// (afterKeys nil: from the start) until fn returns false.
func (sel *selector) walk(afterKeys []key, afterID uint32, fn func(id uint32) bool) {
	sk := sel.q.sorts[0]
	switch {
	case sk.f.name == "id":
		sel.walkIDs(afterKeys, afterID, sk.desc, fn)
	case sk.desc:
		sel.walkUpdatedDesc(afterKeys, afterID, fn)
	default:
		sel.walkUpdatedAsc(afterKeys, afterID, fn)
	}
}

// walkIDs walks the id space, which is the users slice itself.
func (sel *selector) walkIDs(afterKeys []key, afterID uint32, desc bool, fn func(id uint32) bool) {
	d := &sel.s.data
	n := uint32(len(d.users))
	if !desc {
		for id := afterID + 1; id <= n; id++ {
			if sel.matchUser(id, &d.users[id-1]) && !fn(id) {
				return
			}
		}
		return
	}
	start := n
	if afterKeys != nil {
		start = min(n, afterID-1)
	}
	for id := start; id >= 1; id-- {
		if sel.matchUser(id, &d.users[id-1]) && !fn(id) {
			return
		}
	}
}

// visitIndexed calls fn for the user of an updatedAt index entry, unless the
// entry is stale or the user does not match; it returns false to stop.
func (sel *selector) visitIndexed(e idxEntry, fn func(id uint32) bool) bool {
	st := &sel.s.data.users[e.id-1]
	if st.updatedAt != e.ts || !sel.matchUser(e.id, st) {
		return true
	}
	return fn(e.id)
}

// walkUpdatedAsc walks the (updatedAt, id) index forwards from the cursor,
// within the updatedAt filters.
func (sel *selector) walkUpdatedAsc(afterKeys []key, afterID uint32, fn func(id uint32) bool) {
	d := &sel.s.data
	lo, hi := sel.updatedBounds()
	from := idxEntry{lo, 0}
	if afterKeys != nil {
		from = maxEntry(from, idxEntry{afterKeys[0].n, afterID + 1})
	}
	i, _ := slices.BinarySearchFunc(d.index, from, cmpEntry)
	for ; i < len(d.index) && d.index[i].ts <= hi; i++ {
		if !sel.visitIndexed(d.index[i], fn) {
			return
		}
	}
}

// walkUpdatedDesc walks descending updatedAt with ties by ascending id: the
// groups of equal updatedAt backwards, each group forwards.
func (sel *selector) walkUpdatedDesc(afterKeys []key, afterID uint32, fn func(id uint32) bool) {
	d := &sel.s.data
	lo, top := sel.updatedBounds()
	if afterKeys != nil {
		top = min(top, afterKeys[0].n)
	}
	end, _ := slices.BinarySearchFunc(d.index, idxEntry{top + 1, 0}, cmpEntry)
	for end > 0 && d.index[end-1].ts >= lo {
		ts := d.index[end-1].ts
		start := end - 1
		for start > 0 && d.index[start-1].ts == ts {
			start--
		}
		for i := start; i < end; i++ {
			if afterKeys != nil && ts == afterKeys[0].n && d.index[i].id <= afterID {
				continue
			}
			if !sel.visitIndexed(d.index[i], fn) {
				return
			}
		}
		end = start
	}
}

func maxEntry(a, b idxEntry) idxEntry {
	if cmpEntry(a, b) >= 0 {
		return a
	}
	return b
}

// updatedBounds returns the inclusive updatedAt range the filters allow.
func (sel *selector) updatedBounds() (lo, hi int64) {
	lo, hi = -1<<62, 1<<62
	for _, c := range sel.q.conds {
		if c.f == nil || c.f.name != "updatedAt" || c.vals != nil {
			continue
		}
		if c.lo != nil {
			lo = max(lo, c.lo.n)
		}
		if c.hi != nil {
			hi = min(hi, c.hi.n)
		}
	}
	return lo, hi
}

package apisim

import (
	"cmp"
	"slices"
	"sort"
)

// Selecting a page. Users sorted by id or updatedAt take the fast path: a
// walk of the id space or of the (updatedAt, id) index from the cursor's
// position, testing each row, stopping after one row more than the page.
// Everything else (teams, roles, profiles, other sorts, id lists) collects
// the matching rows, sorts them and binary-searches the cursor: O(n log n)
// per page, fine for the small types and for tests.

// pageResult is one selected page.
type pageResult struct {
	ids      []uint32 // in sort order
	lastKeys []key    // sort keys of the last row, for the cursor
	hasNext  bool
	count    int // -1 when not counted
}

// selector evaluates one query; it runs under the dataset's read lock.
type selector struct {
	s          *Server
	q          *query
	now        int64
	lagMs      int64
	hideRecent bool
}

func (s *Server) newSelector(q *query, k *Knobs, now int64) *selector {
	sel := &selector{s: s, q: q, now: now, lagMs: k.LateVisibility.Milliseconds()}
	sel.hideRecent = sel.lagMs > 0 && q.filteredOrSorted() && q.t.kind == kindUser
	return sel
}

// selectPage returns the page of q, counting the matches when wantCount.
func (sel *selector) selectPage(wantCount bool) pageResult {
	q := sel.q
	if sel.fastPath() {
		return sel.fastPage(wantCount)
	}
	rows := sel.sortedRows()
	start := 0
	switch {
	case q.offsetMode:
		start = min(q.offset, len(rows))
	case q.after != nil:
		keys, _ := q.afterKeys()
		start = sort.Search(len(rows), func(i int) bool { return sel.cmpRow(rows[i], keys, uint32(q.after.ID)) > 0 })
	}
	end := min(start+q.size, len(rows))
	res := pageResult{hasNext: end < len(rows), count: len(rows)}
	for _, r := range rows[start:end] {
		res.ids = append(res.ids, r.id)
	}
	if end > start {
		res.lastKeys = rows[end-1].keys
	}
	return res
}

type row struct {
	id   uint32
	keys []key
}

func (sel *selector) cmpRow(r row, keys []key, id uint32) int {
	for i, sk := range sel.q.sorts {
		c := cmpKey(r.keys[i], keys[i])
		if sk.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(r.id, id)
}

// sortedRows returns every matching row in sort order.
func (sel *selector) sortedRows() []row {
	var rows []row
	add := func(id uint32) {
		keys := make([]key, len(sel.q.sorts))
		for i, sk := range sel.q.sorts {
			keys[i] = sel.key(id, sk.f)
		}
		rows = append(rows, row{id, keys})
	}
	d := &sel.s.data
	if sel.q.t.kind == kindUser {
		if ids := sel.idList(); ids != nil {
			for _, id := range ids {
				if st := d.user(id); st != nil && sel.matchUser(id, st) {
					add(id)
				}
			}
		} else {
			for i := range d.users {
				if sel.matchUser(uint32(i+1), &d.users[i]) {
					add(uint32(i + 1))
				}
			}
		}
	} else {
		recs := d.small(sel.q.t.kind)
		for i := range recs {
			if sel.matchSmall(&recs[i]) {
				add(recs[i].id)
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return sel.cmpRow(a, b.keys, b.id) })
	return rows
}

// idList returns the ids of an id-list filter (filter[id]=1,2,3), if any.
func (sel *selector) idList() []uint32 {
	for _, c := range sel.q.conds {
		if c.f != nil && c.f.name == "id" && c.vals != nil {
			ids := make([]uint32, 0, len(c.vals))
			for _, v := range c.vals {
				if v.n > 0 && v.n <= 1<<32-1 {
					ids = append(ids, uint32(v.n))
				}
			}
			slices.Sort(ids)
			return slices.Compact(ids)
		}
	}
	return nil
}

// key returns the value of field f of resource id, for filters and sorting.
func (sel *selector) key(id uint32, f *fieldDef) key {
	if sel.q.t.kind == kindUser {
		u := sel.s.userCtx(id, sel.s.data.user(id))
		return sel.s.userKey(&u, f)
	}
	return smallKey(sel.s.data.smallRec(sel.q.t.kind, id), f)
}

func (s *Server) userKey(u *userCtx, f *fieldDef) key {
	k := key{kind: f.kind}
	switch f.name {
	case "id":
		k.n = int64(u.id)
	case "createdAt":
		k.n = u.st.createdAt
	case "updatedAt":
		k.n = u.st.updatedAt
	case "currentSignInAt":
		k.n, k.null = s.currentSignIn(u)
		k.null = !k.null
	case "email":
		k.s = string(s.appendEmail(nil, u))
	case "username":
		k.s = string(s.appendUsername(nil, u))
	case "firstName":
		k.s = s.firstName(u).raw
	case "lastName":
		k.s = s.lastName(u).raw
	case "locked":
		k.n = int64(boolInt(s.locked(u)))
	default:
		panic("apisim: no key for user field " + f.name) // programmer error: fields and keys disagree
	}
	return k
}

func smallKey(rec *smallRec, f *fieldDef) key {
	k := key{kind: f.kind}
	switch f.name {
	case "id":
		k.n = int64(rec.id)
	case "createdAt":
		k.n = rec.createdAt
	case "updatedAt":
		k.n = rec.updatedAt
	case "name":
		k.s = rec.name
	case "specialId":
		k.s, k.null = rec.special, rec.special == ""
	default:
		panic("apisim: no key for field " + f.name) // programmer error
	}
	return k
}

func (sel *selector) matchUser(id uint32, st *userState) bool {
	if st.deleted {
		return false
	}
	if sel.hideRecent && sel.now < sel.s.visibleAt(id, st, sel.lagMs) {
		return false
	}
	if len(sel.q.conds) == 0 {
		return true
	}
	u := sel.s.userCtx(id, st)
	var buf [maxTeamsPerUser]uint32
	for i := range sel.q.conds {
		c := &sel.q.conds[i]
		if c.rel == nil {
			if !c.match(sel.s.userKey(&u, c.f)) {
				return false
			}
			continue
		}
		ids := c.rel.gen(buf[:0], &u)
		if !slices.ContainsFunc(ids, func(x uint32) bool { _, ok := slices.BinarySearch(c.ids, x); return ok }) {
			return false
		}
	}
	return true
}

func (sel *selector) matchSmall(rec *smallRec) bool {
	if rec.deleted {
		return false
	}
	for i := range sel.q.conds {
		c := &sel.q.conds[i]
		if c.rel == nil {
			if !c.match(smallKey(rec, c.f)) {
				return false
			}
			continue
		}
		if !sel.matchSmallRel(rec, c) {
			return false
		}
	}
	return true
}

func (sel *selector) matchSmallRel(rec *smallRec, c *cond) bool {
	s := sel.s
	if c.rel.name == "users" { // teams by member
		for _, uid := range c.ids {
			st := s.data.user(uid)
			if st == nil || st.deleted {
				continue
			}
			u := s.userCtx(uid, st)
			var buf [maxTeamsPerUser]uint32
			if containsID(s.liveTeams(buf[:0], &u, 0), rec.id) {
				return true
			}
		}
		return false
	}
	var buf [1]uint32
	for _, id := range s.smallRelIDs(buf[:0], sel.q.t.kind, rec, c.rel.name) {
		if _, ok := slices.BinarySearch(c.ids, id); ok {
			return true
		}
	}
	return false
}

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
// (afterKeys nil: from the start) until fn returns false. Its four cases
// (id or updatedAt, ascending or descending) share the cursor logic, which
// is why they stay in one function.
func (sel *selector) walk(afterKeys []key, afterID uint32, fn func(id uint32) bool) {
	d := &sel.s.data
	sk := sel.q.sorts[0]
	if sk.f.name == "id" {
		n := uint32(len(d.users))
		if !sk.desc {
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
		return
	}
	lo, hi := sel.updatedBounds()
	visit := func(e idxEntry) bool {
		st := &d.users[e.id-1]
		if st.updatedAt != e.ts || !sel.matchUser(e.id, st) {
			return true // stale entry or no match
		}
		return fn(e.id)
	}
	if !sk.desc {
		from := idxEntry{lo, 0}
		if afterKeys != nil {
			from = maxEntry(from, idxEntry{afterKeys[0].n, afterID + 1})
		}
		i, _ := slices.BinarySearchFunc(d.index, from, cmpEntry)
		for ; i < len(d.index) && d.index[i].ts <= hi; i++ {
			if !visit(d.index[i]) {
				return
			}
		}
		return
	}
	// Descending updatedAt, ties by ascending id: walk the groups of equal
	// updatedAt backwards, each group forwards.
	top := hi
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
			if !visit(d.index[i]) {
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

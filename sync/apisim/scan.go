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

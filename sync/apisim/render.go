package apisim

import (
	"strconv"
)

// renderCtx is what rendering resources needs besides the dataset; it runs
// under the dataset's read lock.
type renderCtx struct {
	s         *Server
	k         *Knobs
	q         *query
	base      string // scheme://host for links
	canonical bool   // ground truth: every field, ids as numbers, no links or meta
	included  *includeSet

	selfPrefix [4]string // `,"links":{"self":"<base>/api/v2/<path>/` by kind

	// Scratch reused for every user, so that nothing escapes per user
	// through the generators' function values.
	u   userCtx
	r   rng
	ids [8]uint32
}

// includeSet collects included resources, deduplicated, in order of first
// reference.
type includeSet struct {
	seen  map[uint64]bool
	order []includeRef
}

type includeRef struct {
	kind resKind
	id   uint32
}

func (in *includeSet) add(kind resKind, id uint32) {
	k := uint64(kind)<<32 | uint64(id)
	if in.seen[k] {
		return
	}
	in.seen[k] = true
	in.order = append(in.order, includeRef{kind, id})
}

func (rc *renderCtx) fields(kind resKind) fieldSel {
	if rc.canonical {
		return fieldSel{attrs: allMask(), rels: allMask()}
	}
	return rc.q.fields[kind]
}

func (rc *renderCtx) isIncluded(kind resKind, rd *relDef) bool {
	if rc.included == nil {
		return false
	}
	for _, r := range rc.q.include {
		if r == rd && rc.q.t.kind == kind {
			return true
		}
	}
	return false
}

func (rc *renderCtx) stringIDs() bool { return !rc.canonical && rc.k.StringIDs }

// appendHead appends `{"type":"<t>","id":<id>`.
func (rc *renderCtx) appendHead(dst []byte, t *typeDef, id uint32) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, t.name...)
	dst = append(dst, `","id":`...)
	return appendID(dst, id, rc.stringIDs())
}

// appendTail appends the resource's links and meta and closes it.
func (rc *renderCtx) appendTail(dst []byte, t *typeDef, id uint32, u *userCtx) []byte {
	if rc.canonical {
		return append(dst, '}')
	}
	if rc.selfPrefix[t.kind] == "" {
		rc.selfPrefix[t.kind] = `,"links":{"self":"` + rc.base + "/api/v2/" + t.path + "/"
	}
	dst = append(dst, rc.selfPrefix[t.kind]...)
	dst = strconv.AppendUint(dst, uint64(id), 10)
	dst = append(dst, `"}`...)
	if rc.q.authMeta || rc.q.dataConn && u != nil {
		dst = append(dst, `,"meta":{`...)
		if rc.q.authMeta {
			dst = append(dst, `"canWrite":`...)
			dst = appendBool(dst, !rc.k.DenyWrite)
		}
		if rc.q.dataConn && u != nil {
			if rc.q.authMeta {
				dst = append(dst, ',')
			}
			dst = append(dst, `"dataConnections":`...)
			dst = rc.s.appendDataConnections(dst, u)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendUser appends one user resource object. It is the hot path of every
// benchmark: its scratch lives in rc so that nothing allocates per user.
func (rc *renderCtx) appendUser(dst []byte, id uint32, st *userState) []byte {
	s := rc.s
	t := s.types[kindUser]
	rc.u = s.userCtx(id, st)
	sel := rc.fields(kindUser)
	corrupt := s.corruption(id, rc.k.WrongTypeRate)

	dst = rc.appendHead(dst, t, id)
	dst = rc.appendUserAttrs(dst, sel, corrupt)
	dst = rc.appendUserRels(dst, id, sel, corrupt)
	return rc.appendTail(dst, t, id, &rc.u)
}

// appendUserAttrs appends the attributes object of the user in rc.u: the
// selected attributes, drifted ones only with SchemaDrift, one of them
// corrupted when corrupt says so.
func (rc *renderCtx) appendUserAttrs(dst []byte, sel fieldSel, corrupt corruptKind) []byte {
	s := rc.s
	u, r := &rc.u, &rc.r
	corruptIdx := s.corruptAttr(corrupt)
	dst = append(dst, `,"attributes":{`...)
	drift := rc.k.SchemaDrift
	skip := 1 // the first attribute's key goes without its leading comma
	for i := range s.userAttrs {
		a := &s.userAttrs[i]
		if !sel.attrs.has(i) || a.drift && !drift {
			continue
		}
		if i == corruptIdx {
			dst = append(dst, a.key[skip:]...)
			dst = appendCorrupt(dst, corrupt)
			skip = 0
			continue
		}
		if i == s.ix.email && hashShapedEmail(u.id, rc.k.HashShapedEmailEvery) {
			dst = appendHashShaped(append(dst, a.key[skip:]...), u.id)
			skip = 0
			continue
		}
		if a.choices != nil {
			if h := s.attrHash(u, i); h < a.nullThr {
				dst = append(dst, a.keyNull[skip:]...)
			} else {
				dst = append(dst, a.choices[a.choose(h)][skip:]...)
			}
			skip = 0
			continue
		}
		var null bool
		if *r, null = s.attrRNG(u, i); null {
			dst = append(dst, a.keyNull[skip:]...)
			skip = 0
			continue
		}
		dst = append(dst, a.key[skip:]...)
		dst = a.gen(dst, u, r)
		skip = 0
	}
	return append(dst, '}')
}

// appendUserRels appends the relationships object of the user in rc.u, if
// any relationship is selected, and collects what it includes.
func (rc *renderCtx) appendUserRels(dst []byte, id uint32, sel fieldSel, corrupt corruptKind) []byte {
	t := rc.s.types[kindUser]
	first := true
	for i := range t.rels {
		rd := &t.rels[i]
		if !sel.rels.has(i) {
			continue
		}
		dst = append(dst, ',')
		if first {
			dst = append(dst, `"relationships":{`...)
			first = false
		}
		ids := rd.gen(rc.ids[:0], &rc.u)
		if rc.included != nil && rc.isIncluded(kindUser, rd) {
			for _, x := range ids {
				rc.included.add(rd.target, x)
			}
		}
		switch {
		case rd.name == "teams" && rc.k.TeamsLinksOnly && !rc.canonical && !rc.isIncluded(kindUser, rd):
			dst = append(dst, rd.key...)
			dst = append(dst, `{"links":{"related":"`...)
			dst = append(dst, rc.base...)
			dst = append(dst, "/api/v2/teams?filter[users][id]="...)
			dst = strconv.AppendUint(dst, uint64(id), 10)
			dst = append(dst, `"}}`...)
		case rd.name == "role" && corrupt == corruptRoleID && len(ids) == 1:
			dst = append(dst, rd.key...)
			dst = append(dst, `{"data":{"type":"role","id":"r-`...)
			dst = strconv.AppendUint(dst, uint64(ids[0]), 10)
			dst = append(dst, `"}}`...)
		default:
			dst = rc.appendRelData(dst, rd, ids)
		}
	}
	if !first {
		dst = append(dst, '}')
	}
	return dst
}

// appendRelData appends "name":{"data":...} for the related ids.
func (rc *renderCtx) appendRelData(dst []byte, rd *relDef, ids []uint32) []byte {
	dst = append(dst, rd.dataKey...)
	if !rd.toMany {
		if len(ids) == 0 {
			return append(dst, "null}"...)
		}
		dst = append(dst, rd.ident...)
		dst = appendID(dst, ids[0], rc.stringIDs())
		return append(dst, "}}"...)
	}
	dst = append(dst, '[')
	for j, x := range ids {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, rd.ident...)
		dst = appendID(dst, x, rc.stringIDs())
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendSmall appends a team, role or profile resource object.
func (rc *renderCtx) appendSmall(dst []byte, kind resKind, rec *smallRec) []byte {
	s := rc.s
	t := s.types[kind]
	sel := rc.fields(kind)
	dst = rc.appendHead(dst, t, rec.id)
	dst = append(dst, `,"attributes":{`...)
	first := true
	for i, name := range t.attrs {
		if !sel.attrs.has(i) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		switch name {
		case "createdAt":
			dst = appendMillis(dst, rec.createdAt)
		case "updatedAt":
			dst = appendMillis(dst, rec.updatedAt)
		default:
			dst = append(dst, rec.vals[i]...)
		}
	}
	dst = append(dst, '}')
	first = true
	var buf [1]uint32
	for i := range t.rels {
		rd := &t.rels[i]
		if !rd.rendered || !sel.rels.has(i) {
			continue
		}
		dst = append(dst, ',')
		if first {
			dst = append(dst, `"relationships":{`...)
			first = false
		}
		ids := s.smallRelIDs(buf[:0], kind, rec, rd.name)
		if rc.included != nil && rc.isIncluded(kind, rd) {
			for _, x := range ids {
				rc.included.add(rd.target, x)
			}
		}
		dst = rc.appendRelData(dst, rd, ids)
	}
	if !first {
		dst = append(dst, '}')
	}
	return rc.appendTail(dst, t, rec.id, nil)
}

// appendList appends resources separated by commas; leadingComma puts one
// before the first.
func (rc *renderCtx) appendList(dst []byte, kind resKind, ids []uint32, leadingComma bool) []byte {
	for i, id := range ids {
		if i > 0 || leadingComma {
			dst = append(dst, ',')
		}
		dst, _ = rc.appendResource(dst, kind, id)
	}
	return dst
}

// appendResource appends any resource by kind and id; false if it does not
// exist or is deleted.
func (rc *renderCtx) appendResource(dst []byte, kind resKind, id uint32) ([]byte, bool) {
	if kind == kindUser {
		st := rc.s.data.user(id)
		if st == nil || st.deleted {
			return dst, false
		}
		return rc.appendUser(dst, id, st), true
	}
	rec := rc.s.data.smallRec(kind, id)
	if rec == nil || rec.deleted {
		return dst, false
	}
	return rc.appendSmall(dst, kind, rec), true
}

// appendIncluded appends `,"included":[...]` when the request asked for it.
// Included resources may include further ones only through the primary
// type's relationships (one level, as the real service).
func (rc *renderCtx) appendIncluded(dst []byte) []byte {
	if rc.included == nil {
		return dst
	}
	dst = append(dst, `,"included":[`...)
	primary := rc.included
	rc.included = nil // one level only
	first := true
	for _, ref := range primary.order {
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = rc.appendResource(dst, ref.kind, ref.id); !ok {
			dst = dst[:mark]
			continue
		}
		first = false
	}
	rc.included = primary
	return append(dst, ']')
}

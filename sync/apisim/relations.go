package apisim

// Relationship ids of a user: role, profile and teams come from its stored
// state (and hide deleted targets); the others are drawn from
// (seed, id, version) like attributes.

// userRelGen returns the generator of the user relationship name: the rule
// of a stored relationship, else the rule of a drawn one.
func (s *Server) userRelGen(name string) func(dst []uint32, u *userCtx) []uint32 {
	if g := s.storedRelGen(name); g != nil {
		return g
	}
	return s.drawnRelGen(name)
}

// storedRelGen returns the generator of a relationship kept in the user's
// state, or nil for the others.
func (s *Server) storedRelGen(name string) func(dst []uint32, u *userCtx) []uint32 {
	switch name {
	case "role":
		return func(dst []uint32, u *userCtx) []uint32 {
			if s.data.liveSmall(kindRole, uint32(u.st.role)) {
				dst = append(dst, uint32(u.st.role))
			}
			return dst
		}
	case "profile":
		return func(dst []uint32, u *userCtx) []uint32 {
			if s.data.liveSmall(kindProfile, uint32(u.st.profile)) {
				dst = append(dst, uint32(u.st.profile))
			}
			return dst
		}
	case "teams":
		return func(dst []uint32, u *userCtx) []uint32 { return s.liveTeams(dst, u, 0) }
	case "directAssignedTeams":
		return func(dst []uint32, u *userCtx) []uint32 { return s.liveTeams(dst, u, 1) }
	case "roleAssignedTeams":
		return func(dst []uint32, u *userCtx) []uint32 { return s.liveTeams(dst, u, 2) }
	}
	return nil
}

// drawnRelGen returns the generator of a relationship drawn from (seed, id,
// version); one switch holds every such rule, like customizeAttr for
// attributes.
func (s *Server) drawnRelGen(name string) func(dst []uint32, u *userCtx) []uint32 {
	switch name {
	case "creator":
		return func(dst []uint32, u *userCtx) []uint32 {
			r := relDraw(11, u, 0)
			if u.id > 1 && !r.chance(0.1) {
				dst = append(dst, 1+uint32(r.intn(int(u.id-1))))
			}
			return dst
		}
	case "updater":
		return func(dst []uint32, u *userCtx) []uint32 {
			r := relDraw(12, u, 1)
			if !r.chance(0.15) {
				dst = append(dst, 1+uint32(r.intn(max(1, s.opts.Users))))
			}
			return dst
		}
	case "mailbox":
		return func(dst []uint32, u *userCtx) []uint32 {
			if !s.noMailbox(u) {
				dst = append(dst, 10_000_000+u.id)
			}
			return dst
		}
	case "mailboxes":
		return s.mailboxes
	case "contentCategories":
		return someRelIDs(14, 0.2, 3, 1, 60, 3)
	case "contentCategoryOwnerships":
		return someRelIDs(15, 0.6, 2, 1, 500, 4)
	case "recipients":
		return someRelIDs(16, 0.8, 2, 1, 100_000, 2)
	case "outboundVoicemails":
		return someRelIDs(17, 0.7, 2, 1, 50_000, 5)
	case "voicemailPrompts":
		return someRelIDs(18, 0.75, 3, 1, 20_000, 5)
	}
	return func(dst []uint32, _ *userCtx) []uint32 { return dst } // a relationship added to the catalog later
}

// relDraw returns the random stream of one relationship of a user; it
// changes every period versions, or never when period is 0.
func relDraw(salt uint64, u *userCtx, period uint32) rng {
	v := uint64(0)
	if period > 0 {
		v = uint64(u.st.version / period)
	}
	return rng{s: mix(u.base ^ salt*0xC2B2AE3D27D4EB4F ^ v)}
}

// someRelIDs returns a generator that draws 0..n ids in [base, base+span).
func someRelIDs(salt uint64, pEmpty float64, n int, base, span uint32, period uint32) func([]uint32, *userCtx) []uint32 {
	return func(dst []uint32, u *userCtx) []uint32 {
		r := relDraw(salt, u, period)
		if r.chance(pEmpty) {
			return dst
		}
		for i, k := 0, 1+r.intn(n); i < k; i++ {
			id := base + uint32(r.intn(int(span)))
			if !containsID(dst, id) {
				dst = append(dst, id)
			}
		}
		return dst
	}
}

// mailboxes appends the user's mailboxes: its own, sometimes with a second,
// or, for a user without its own, sometimes another.
func (s *Server) mailboxes(dst []uint32, u *userCtx) []uint32 {
	r := relDraw(13, u, 3)
	switch {
	case !s.noMailbox(u):
		dst = append(dst, 10_000_000+u.id)
		if r.chance(0.2) {
			dst = append(dst, 20_000_000+u.id)
		}
	case r.chance(0.5):
		dst = append(dst, 30_000_000+u.id)
	}
	return dst
}

func (s *Server) noMailbox(u *userCtx) bool {
	r := rng{s: mix(u.base ^ 0x6D61696C626F78)}
	return r.chance(0.12)
}

// liveTeams appends the user's live teams: all (part 0), those assigned
// directly (part 1) or those assigned through the role (part 2).
func (s *Server) liveTeams(dst []uint32, u *userCtx, part int) []uint32 {
	direct := mix(u.base ^ 0x5BD1E995)
	for i := range int(u.st.nTeams) {
		t := u.st.teams[i]
		isDirect := direct>>i&1 == 1 || i == 0
		if part == 1 && !isDirect || part == 2 && isDirect {
			continue
		}
		if s.data.liveSmall(kindTeam, t) {
			dst = append(dst, t)
		}
	}
	return dst
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// smallRelIDs appends a small resource's relationship ids (roles' parentRole).
func (s *Server) smallRelIDs(dst []uint32, kind resKind, rec *smallRec, rel string) []uint32 {
	if kind == kindRole && rel == "parentRole" && s.data.liveSmall(kindRole, rec.parent) {
		dst = append(dst, rec.parent)
	}
	return dst
}

// appendDataConnections appends meta.dataConnections of a user: zero to
// three connections to external systems, varied by version.
func (s *Server) appendDataConnections(dst []byte, u *userCtx) []byte {
	r := rng{s: mix(u.base ^ saltConnections*0x9E3779B1 ^ uint64(u.st.version/2)<<32)}
	dst = append(dst, '[')
	if r.chance(0.25) {
		return append(dst, ']')
	}
	providers := s.pools.providers
	first := r.intn(len(providers))
	for i, n := 0, 1+r.intn(3); i < n; i++ {
		p := providers[(first+i)%len(providers)]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"provider":"`...)
		dst = append(dst, p...)
		dst = append(dst, `","connected":`...)
		dst = appendBool(dst, !r.chance(0.15))
		dst = append(dst, `,"externalId":"`...)
		switch p {
		case "salesforce":
			dst = append(dst, "005"...)
			for range 15 {
				dst = append(dst, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[r.intn(62)])
			}
		case "hubspot", "linkedin":
			dst = appendInt(dst, int64(100_000+r.intn(900_000_000)))
		default:
			dst = appendUUID(dst, r.next(), r.next())
		}
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

package apisim

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Wrong-typed members, sent under the WrongTypeRate knob, and emails shaped
// like hashes, under HashShapedEmailEvery.

// hashShapedEmail says whether user id is sent with an email shaped like a
// hash under the HashShapedEmailEvery knob.
func hashShapedEmail(id uint32, every int) bool { return every > 0 && id%uint32(every) == 0 }

// appendHashShaped appends the email of user id shaped like a hash: the
// SHA-256 of its id in lower-case hex, as a JSON string.
func appendHashShaped(dst []byte, id uint32) []byte {
	sum := sha256.Sum256(strconv.AppendUint(nil, uint64(id), 10))
	return append(hex.AppendEncode(append(dst, '"'), sum[:]), '"')
}

// corruption returns which member of u is sent with a wrong type under the
// WrongTypeRate knob, or corruptNone.
func (s *Server) corruption(id uint32, rate float64) corruptKind {
	if rate <= 0 {
		return corruptNone
	}
	r := s.seeded(saltCorrupt, uint64(id))
	if !r.chance(rate) {
		return corruptNone
	}
	return corruptKind(1 + r.intn(int(corruptRoleID)))
}

// corruptKind names a wrong-typed member.
type corruptKind int

const (
	corruptNone corruptKind = iota
	corruptLocked
	corruptViewID
	corruptCustom
	corruptDuties
	corruptSignIn
	corruptRoleID
)

// member is the name reported in Resource.WrongType.
func (k corruptKind) member() string {
	return [...]string{"", "locked", "accountsViewId", "custom1", "duties", "currentSignInAt", "relationships.role"}[k]
}

// corruptAttr returns the attribute index corrupted by k, or -1.
func (s *Server) corruptAttr(k corruptKind) int {
	switch k {
	case corruptLocked:
		return s.ix.locked
	case corruptViewID:
		return s.ix.accountsView
	case corruptCustom:
		return s.ix.custom1
	case corruptDuties:
		return s.ix.duties
	case corruptSignIn:
		return s.ix.current
	}
	return -1
}

func appendCorrupt(dst []byte, k corruptKind) []byte {
	switch k {
	case corruptLocked:
		return append(dst, `"yes"`...)
	case corruptViewID:
		return append(dst, `"12"`...)
	case corruptCustom:
		return append(dst, `12345`...)
	case corruptDuties:
		return append(dst, `"SDR"`...)
	case corruptSignIn:
		return append(dst, `"last tuesday"`...)
	}
	return dst
}

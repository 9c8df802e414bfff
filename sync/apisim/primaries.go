package apisim

import (
	"runtime"
	"sync"
)

// appendPrimaries appends the comma-separated resources of a page. Large
// pages are rendered in parallel chunks, each into its own buffer (the
// caller holds the read lock for all of them), so one client walking
// 1000-user pages keeps every core busy: serving must not be the
// bottleneck of a benchmark.
func (s *Server) appendPrimaries(dst []byte, rc *renderCtx, kind resKind, ids []uint32) []byte {
	const chunk = 200
	parts := min(runtime.GOMAXPROCS(0), len(ids)/chunk, 8)
	if parts < 2 || rc.included != nil {
		return rc.appendList(dst, kind, ids, false)
	}
	per := (len(ids) + parts - 1) / parts
	bufs := make([]*[]byte, parts)
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() {
			sub := &renderCtx{s: rc.s, k: rc.k, q: rc.q, base: rc.base, canonical: rc.canonical}
			b := s.getBuf()
			*b = sub.appendList((*b)[:0], kind, ids[p*per:min((p+1)*per, len(ids))], true)
			bufs[p] = b
		})
	}
	dst = rc.appendList(dst, kind, ids[:per], false)
	wg.Wait()
	for _, b := range bufs[1:] {
		dst = append(dst, *b...)
		s.putBuf(b)
	}
	return dst
}

const maxPooledBuf = 8 << 20

func (s *Server) getBuf() *[]byte {
	if bp, ok := s.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 64<<10)
	return &b
}

func (s *Server) putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooledBuf {
		*bp = (*bp)[:0]
		s.bufs.Put(bp)
	}
}

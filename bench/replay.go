package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
)

// replay sits in front of the simulator. While recording it keeps every
// response the simulator gives; while replaying it answers a request it
// has seen with the recorded response, byte for byte, and passes any other
// to the simulator. It lets a backfill be timed without the simulator
// rendering its pages on the same two cores: a real API spends that CPU on
// its own machines. Responses depend only on the request while the dataset
// does not change, so the bench replays only between the recording walk and
// the backfill, before it changes any user.
type replay struct {
	sim http.Handler

	mu        sync.Mutex
	mode      replayMode
	responses map[string]recorded
	bodies    arena
	hits      int
}

type replayMode int

const (
	passThrough replayMode = iota
	recording
	replaying
)

// recorded is a response as the simulator gave it; its body is in the
// replay's arena.
type recorded struct {
	code   int
	header http.Header
	body   []byte
}

func newReplay(sim http.Handler) *replay {
	return &replay{sim: sim, responses: map[string]recorded{}}
}

// set switches the mode; passThrough also drops what was recorded. It
// returns the number of requests answered from the recording since the
// last switch.
func (p *replay) set(m replayMode) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == passThrough {
		p.responses = map[string]recorded{}
		p.bodies.free()
	}
	hits := p.hits
	p.hits = 0
	return hits
}

func (p *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.RequestURI()
	p.mu.Lock()
	mode := p.mode
	rec, known := p.responses[key]
	if mode == replaying && known {
		p.hits++
	}
	p.mu.Unlock()
	switch {
	case mode == replaying && known:
	case mode == recording:
		rr := httptest.NewRecorder()
		p.sim.ServeHTTP(rr, r)
		p.mu.Lock()
		rec = recorded{code: rr.Code, header: rr.Header(), body: p.bodies.copy(rr.Body.Bytes())}
		p.responses[key] = rec
		p.mu.Unlock()
	default:
		p.sim.ServeHTTP(w, r)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.code)
	_, _ = w.Write(rec.body)
}

// arena holds the recorded bodies (3.5 GB at 1M users) in large mappings
// the kernel backs with huge pages (MADV_HUGEPAGE: this machine's
// transparent huge pages are "madvise"). On the Go heap, in 4 KiB pages,
// the 1M replay cost the bench 6.1–9.4 s of CPU per backfill, and the
// bench's own decoding of the same pages ran at half its speed; in huge
// pages, 2.8 s (docs/benchmarks.md, "What the write path's choices are worth").
type arena struct {
	chunks [][]byte
	used   int // bytes used of the last chunk
}

const arenaChunk = 256 << 20

// copy returns a copy of b in the arena.
func (a *arena) copy(b []byte) []byte {
	if len(b) > arenaChunk {
		return append([]byte(nil), b...) // no page is this large; kept anyway
	}
	if len(a.chunks) == 0 || a.used+len(b) > arenaChunk {
		c, err := syscall.Mmap(-1, 0, arenaChunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return append([]byte(nil), b...)
		}
		_ = syscall.Madvise(c, madvHugepage) // without it, 4 KiB pages: slower, not wrong
		a.chunks, a.used = append(a.chunks, c), 0
	}
	c := a.chunks[len(a.chunks)-1]
	out := c[a.used : a.used+len(b) : a.used+len(b)]
	copy(out, b)
	a.used += len(b)
	return out
}

// free unmaps every chunk; no body copied before may be used after it.
func (a *arena) free() {
	for _, c := range a.chunks {
		_ = syscall.Munmap(c)
	}
	a.chunks, a.used = nil, 0
}

// madvHugepage is Linux's MADV_HUGEPAGE (the syscall package does not
// name it).
const madvHugepage = 14

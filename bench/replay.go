package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
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
	responses map[string]*httptest.ResponseRecorder
	hits      int
}

type replayMode int

const (
	passThrough replayMode = iota
	recording
	replaying
)

func newReplay(sim http.Handler) *replay {
	return &replay{sim: sim, responses: map[string]*httptest.ResponseRecorder{}}
}

// set switches the mode; passThrough also drops what was recorded. It
// returns the number of requests answered from the recording since the
// last switch.
func (p *replay) set(m replayMode) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == passThrough {
		p.responses = map[string]*httptest.ResponseRecorder{}
	}
	hits := p.hits
	p.hits = 0
	return hits
}

func (p *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.RequestURI()
	p.mu.Lock()
	mode, rec := p.mode, p.responses[key]
	if mode == replaying && rec != nil {
		p.hits++
	}
	p.mu.Unlock()
	switch {
	case mode == replaying && rec != nil:
	case mode == recording:
		rec = httptest.NewRecorder()
		p.sim.ServeHTTP(rec, r)
		p.mu.Lock()
		p.responses[key] = rec
		p.mu.Unlock()
	default:
		p.sim.ServeHTTP(w, r)
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

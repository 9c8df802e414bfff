package apisim

import (
	"net/http"
	"strconv"
	"time"
)

const hourMs = 3_600_000

// tick counts an API request and runs a churn round when one is due. It
// returns the request's sequence number (1-based).
func (s *Server) tick(k *Knobs) int64 {
	s.faultMu.Lock()
	s.apiRequests++
	seq := s.apiRequests
	s.faultMu.Unlock()
	if c := k.Churn; c.Every > 0 && seq%int64(c.Every) == 0 {
		s.churn(c)
	}
	return seq
}

// limit applies the rate-limit knobs: it sets the x-ratelimit-* headers and
// returns a 429 error when the request is refused.
func (s *Server) limit(k *Knobs, seq int64, hdr http.Header) *apiError {
	if k.RateLimit <= 0 && k.RateLimitEvery <= 0 {
		return nil
	}
	now := s.nowMs()
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	var refused bool
	var retryAfter int64
	if k.RateLimit > 0 {
		reset := s.rateWindow(k, now)
		if s.rateUsed >= k.RateLimit {
			refused, retryAfter = true, ceilDiv(reset-now, 1000)
		} else {
			s.rateUsed++
		}
		// The second number mimics the undocumented org-wide budget the real
		// header carries ("9999, 19988").
		rateHeader(hdr, "x-ratelimit-limit", k.LimitHeader, strconv.Itoa(k.RateLimit),
			strconv.Itoa(k.RateLimit)+";w="+strconv.FormatInt(k.window()/1000, 10))
		hdr.Set("x-ratelimit-remaining", strconv.Itoa(k.RateLimit-s.rateUsed)+", "+strconv.Itoa(2*k.RateLimit-s.rateUsed))
		rateHeader(hdr, "x-ratelimit-reset", k.ResetHeader, strconv.FormatInt(ceilDiv(reset, 1000), 10),
			time.UnixMilli(reset).UTC().Format(http.TimeFormat))
	}
	if !refused && k.RateLimitEvery > 0 && seq%int64(k.RateLimitEvery) == 0 {
		refused, retryAfter = true, ceilDiv(k.RetryAfter.Milliseconds(), 1000)
	}
	if !refused {
		return nil
	}
	hdr.Set("Retry-After", strconv.FormatInt(retryAfter, 10))
	at := time.UnixMilli(now + retryAfter*1000).UTC().Format("2006-01-02T15:04:05")
	limit := k.RateLimit
	if limit == 0 {
		limit = 10_000
	}
	return &apiError{status: 429, id: "rateLimitExceeded", title: "Rate Limit Exceeded",
		detail: "You have exceeded your permitted rate limit of " + strconv.Itoa(limit) + "; please try again at " + at + "."}
}

// window is the rate-limit window in milliseconds.
func (k *Knobs) window() int64 {
	if k.RateLimitWindow > 0 {
		return k.RateLimitWindow.Milliseconds()
	}
	return hourMs
}

// rateWindow starts a new rate-limit window when the last one ended and
// returns when the current one ends (Unix ms). s.faultMu is held.
func (s *Server) rateWindow(k *Knobs, now int64) int64 {
	if s.rateStart == 0 || now >= s.rateStart+k.window() {
		s.rateStart, s.rateUsed = now, 0
	}
	return s.rateStart + k.window()
}

// rateHeader sets a rate-limit header as mode says: value, garbled or
// nothing.
func rateHeader(hdr http.Header, name string, mode HeaderMode, value, garbled string) {
	switch mode {
	case HeaderSent:
		hdr.Set(name, value)
	case HeaderGarbled:
		hdr.Set(name, garbled)
	case HeaderOmitted:
	}
}

// SpendRateLimit counts n requests against the current rate-limit window
// (RateLimit), as the token owner's other tools, which share the budget,
// would; at most the whole limit is spent.
func (s *Server) SpendRateLimit(n int) {
	k := s.knobs.Load()
	if k.RateLimit <= 0 || n <= 0 {
		return
	}
	now := s.nowMs()
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.rateWindow(k, now)
	s.rateUsed = min(s.rateUsed+n, k.RateLimit)
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// fault returns the status of an injected failure, or 0.
func (s *Server) fault(k *Knobs, seq int64) int {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	switch {
	case s.failNext > 0:
		s.failNext--
		return s.failNextStatus
	case k.FailEvery > 0 && seq%int64(k.FailEvery) == 0:
		if k.FailStatus == 0 {
			return 503
		}
		return k.FailStatus
	case k.FaultRate > 0 && s.faultRNG.chance(k.FaultRate):
		statuses := k.FaultStatuses
		if len(statuses) == 0 {
			statuses = []int{500, 502, 503, 504}
		}
		return statuses[s.faultRNG.intn(len(statuses))]
	}
	return 0
}

// writeFault sends an injected failure: an HTML page for 502 and 504 (a
// gateway answered, not the API), a JSON:API error otherwise.
func (s *Server) writeFault(w http.ResponseWriter, endpoint string, hdr http.Header, status int) {
	s.stats.fault()
	s.log.Debug("apisim injected a failure", "endpoint", endpoint, "status", status)
	text := http.StatusText(status)
	if status == 502 || status == 504 {
		body := "<html>\r\n<head><title>" + strconv.Itoa(status) + " " + text + "</title></head>\r\n<body>\r\n<center><h1>" +
			strconv.Itoa(status) + " " + text + "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
		s.write(w, endpoint, hdr, status, "text/html", []byte(body), false)
		return
	}
	e := &apiError{status: status, id: "internalServerError", title: text, detail: "The server failed to handle the request."}
	if status == 503 {
		e.id = "scheduledServerMaintenance"
		e.detail = "The service is temporarily unavailable; please try again shortly."
		hdr.Set("Retry-After", "1")
	}
	s.writeError(w, endpoint, hdr, e)
}

// truncate draws whether this response is cut short.
func (s *Server) truncate(k *Knobs) bool {
	if k.TruncateRate <= 0 {
		return false
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	return s.faultRNG.chance(k.TruncateRate)
}

// shuffled returns a permutation of ids (the OutOfOrder knob).
func (s *Server) shuffled(ids []uint32) []uint32 {
	out := append([]uint32(nil), ids...)
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for i := len(out) - 1; i > 0; i-- {
		j := s.faultRNG.intn(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

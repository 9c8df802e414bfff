package apisim

import "math/bits"

const golden = 0x9E3779B97F4A7C15

// Salts separate the streams drawn for different purposes.
const (
	saltUser uint64 = iota + 1
	saltCreated
	saltMembership
	saltCorrupt
	saltVisible
	saltConnections
	saltMutation
	saltFaults
	saltTokens
	saltSmall = 100
)

func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// rng is a splitmix64 generator: tiny, fast and good enough for test data.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += golden
	return mix(r.s)
}

// intn returns a number in [0, n); n must be positive. It multiplies
// instead of dividing (Lemire's method): this is on the hot path.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// int63n returns a number in [0, n); n must be positive.
func (r *rng) int63n(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

func (r *rng) float() float64 { return float64(r.next()>>11) * 0x1p-53 }

func (r *rng) chance(p float64) bool { return r.float() < p }

// threshold converts a probability to a bound on a uint64 draw.
func threshold(p float64) uint64 {
	if p >= 1 {
		return ^uint64(0)
	}
	return uint64(p * 0x1p64)
}

// seeded returns the stream for (seed, salt, parts...).
func (s *Server) seeded(salt uint64, parts ...uint64) rng {
	h := mix(uint64(s.opts.Seed) ^ salt*golden)
	for _, p := range parts {
		h = mix(h ^ (p + golden))
	}
	return rng{s: h}
}

// Package jsonscan is a strict JSON scanner: it validates every byte it
// passes and reports positions, never building values. normalize's single
// pass over a users page and its canonical JSON are built on it, and the
// API client finds a document's data member with it, because building
// values first cost more than the rest of the page's work.
//
// Every function takes the text and an offset and returns the offset after
// what it read, with ok false on invalid JSON:
//
//	i := jsonscan.WS(b, 0)
//	end, ok := jsonscan.Members(b, i, func(key []byte, plain bool, k, v int) (int, bool) {
//		// b[v:] is the member's value: scan it and return where it ends.
//		return jsonscan.SkipValue(b, v, 1)
//	})
package jsonscan

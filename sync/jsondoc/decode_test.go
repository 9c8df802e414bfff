package jsondoc

import (
	"strings"
	"testing"
)

// TestRestOf: what the JSON decoder reads of a page whose data a
// DataDecoder typed: data and every top-level "included" value cut to [],
// the rest as sent; a scan that fails cuts data alone.
func TestRestOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"included after data", `{"data":[1,2],"included":[{"type":"team","id":7}],"links":{"next":null}}`,
			`{"data":[],"included":[],"links":{"next":null}}`},
		{"included first", `{ "included" : [{"type":"team"}] , "data":[1]}`, `{ "included" : [] , "data":[]}`},
		{"included twice", `{"data":[1],"included":[1],"meta":{},"included":[2]}`, `{"data":[],"included":[],"meta":{},"included":[]}`},
		{"nested included kept", `{"data":[1],"meta":{"included":[3]}}`, `{"data":[],"meta":{"included":[3]}}`},
		{"escaped key kept", `{"data":[1],"incl\u0075ded":[4]}`, `{"data":[],"incl\u0075ded":[4]}`},
		{"malformed included", `{"data":[1],"included":[{"type":"team",}]}`, `{"data":[],"included":[{"type":"team",}]}`},
		{"truncated", `{"data":[1],"included":[{"ty`, `{"data":[],"included":[{"ty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at := strings.Index(tc.body, `[1`)
			n := strings.Index(tc.body[at:], "]") + 1
			if got := string(restOf([]byte(tc.body), at, n)); got != tc.want {
				t.Fatalf("restOf = %s, want %s", got, tc.want)
			}
		})
	}
}

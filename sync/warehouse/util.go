package warehouse

import "bytes"

// sanitizeJSON makes a raw resource storable in jsonb: PostgreSQL refuses the
// escape \u0000, so it becomes the replacement character (the quarantine
// error says the original held a NUL).
func sanitizeJSON(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	return bytes.ReplaceAll(raw, []byte(`\u0000`), []byte(`\ufffd`))
}

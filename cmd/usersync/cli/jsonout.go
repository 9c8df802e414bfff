package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jsonVersion is the version of every --json output's shape, its first
// key. It goes up when a key is renamed or removed or changes meaning, not
// when one is added (docs/operations.md, JSON outputs).
const jsonVersion = 1

// writeJSON prints v, which must encode as an object, indented, with
// "version" as its first key; keys are snake_case. v's own "version", if
// any, wins: a run summary carries the version it was stored with.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("encoding JSON: %T is not an object", v)
	}
	var own struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &own); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if own.Version == nil {
		sep := ","
		if string(b) == "{}" {
			sep = ""
		}
		b = append([]byte(fmt.Sprintf(`{"version":%d%s`, jsonVersion, sep)), b[1:]...)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

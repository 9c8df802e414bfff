package sqlfile

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadAndAssign: statements are read by name, comments dropped and
// placeholders filled; a placeholder left unfilled, a statement no field
// takes and a field with no statement are refused, naming them.
func TestLoadAndAssign(t *testing.T) {
	fsys := fstest.MapFS{"sql/x.sql": {Data: []byte("-- the file's comment\n\n-- name: one\n-- why\nSELECT 1 FROM {{schema}}.t\n\n-- name: two\nSELECT {{cols}}\n")}}
	st, err := Load(fsys, "x", map[string]string{"schema": `"s"`, "cols": "a, b"})
	if err != nil || st["one"] != `SELECT 1 FROM "s".t` || st["two"] != "SELECT a, b" || len(st) != 2 {
		t.Fatalf("Load: %q %v", st, err)
	}
	if _, err := Load(fsys, "x", map[string]string{"schema": `"s"`}); err == nil || !strings.Contains(err.Error(), "statement two: no value for {{cols}}") {
		t.Errorf("a placeholder left unfilled: %v", err)
	}
	if _, err := Load(fsys, "y", nil); err == nil || !strings.Contains(err.Error(), "reading sql/y.sql") {
		t.Errorf("a missing file: %v", err)
	}
	var one, two, three string
	if err := Assign("x", st, map[string]*string{"one": &one, "two": &two}); err != nil || one != st["one"] || two != st["two"] {
		t.Errorf("Assign: %q %q %v", one, two, err)
	}
	if err := Assign("x", st, map[string]*string{"one": &one}); err == nil || !strings.Contains(err.Error(), "statement two is not used") {
		t.Errorf("a statement no field takes: %v", err)
	}
	if err := Assign("x", st, map[string]*string{"one": &one, "two": &two, "three": &three}); err == nil || !strings.Contains(err.Error(), "has no statement three") {
		t.Errorf("a field with no statement: %v", err)
	}
}

// TestLaterAndFill: a placeholder whose value is Later is kept by Load,
// others of the same line are filled, and Fill fills the kept one once,
// leaving a value that looks like a placeholder as it is.
func TestLaterAndFill(t *testing.T) {
	fsys := fstest.MapFS{"sql/x.sql": {Data: []byte("-- name: one\nSET x = '{{id}}' -- {{schema}}\n")}}
	st, err := Load(fsys, "x", map[string]string{"schema": `"s"`, "id": Later})
	if err != nil || st["one"] != `SET x = '{{id}}' -- "s"` {
		t.Fatalf("Load: %q %v", st, err)
	}
	if got := Fill(st["one"], map[string]string{"id": "{{schema}}"}); got != `SET x = '{{schema}}' -- "s"` {
		t.Errorf("Fill: %q", got)
	}
	if _, err := Load(fsys, "x", map[string]string{"id": Later}); err == nil || !strings.Contains(err.Error(), "no value for {{schema}}") {
		t.Errorf("a placeholder left unfilled beside a kept one: %v", err)
	}
}

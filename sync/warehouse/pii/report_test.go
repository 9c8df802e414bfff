package pii

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadUserIDs: one id a line, blank lines and # comments skipped; a bad
// line is named by its number.
func TestReadUserIDs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ids")
	if err := os.WriteFile(path, []byte("# erasure requests\n12\n\n 34 # by mail\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ids, err := ReadUserIDs(path); err != nil || !slices.Equal(ids, []int64{12, 34}) {
		t.Errorf("ids %v (%v), want [12 34]", ids, err)
	}
	if err := os.WriteFile(path, []byte("12\n-3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUserIDs(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a negative id: %v, want an error naming line 2", err)
	}
	if _, err := ParseUserID("abc"); err == nil {
		t.Error("ParseUserID took abc")
	}
}

package deploy_test

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// bullet is a list entry's first line, its indent captured.
var bullet = regexp.MustCompile(`^(\s*)- `)

// TestChangelogEntriesAreShort: each CHANGELOG entry, nested ones included,
// takes at most two lines, so a reader scans a release in a minute; the
// detail belongs in the docs the entry names.
func TestChangelogEntriesAreShort(t *testing.T) {
	f, err := os.Open("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var start, lines, indent int
	check := func() {
		if lines > 2 {
			t.Errorf("CHANGELOG.md:%d: an entry of %d lines; keep it to two", start, lines)
		}
		lines = 0
	}
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := bullet.FindStringSubmatch(line); m != nil {
			check()
			start, lines, indent = n, 1, len(m[1])
			continue
		}
		if lines > 0 && strings.TrimSpace(line) != "" && strings.HasPrefix(line, strings.Repeat(" ", indent+2)) {
			lines++
			continue
		}
		check()
	}
	check()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

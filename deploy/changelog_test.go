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

// TestReadersDocsAreShort: the README says what usersync is, the two
// commands and where to go next; docs/benchmarks.md holds today's figures,
// each with its command. History belongs in git, not in either.
func TestReadersDocsAreShort(t *testing.T) {
	for file, most := range map[string]int{"../README.md": 200, "../docs/benchmarks.md": 250} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > most {
			t.Errorf("%s has %d lines; keep it within %d", strings.TrimPrefix(file, "../"), n, most)
		}
	}
}

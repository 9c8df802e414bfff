package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCompareReadsPrintedColumns: every column bench/compare.sh reads by
// name is one the bench prints, so a renamed column fails here rather than
// in a long comparison run.
func TestCompareReadsPrintedColumns(t *testing.T) {
	script, err := os.ReadFile("compare.sh")
	if err != nil {
		t.Fatal(err)
	}
	read := regexp.MustCompile(`c\["\w+"\] = "([^"]+)"`).FindAllStringSubmatch(string(script), -1)
	if len(read) < 6 {
		t.Fatalf("found %d columns read in compare.sh: is the pattern out of date?", len(read))
	}
	printed := map[string]bool{}
	for _, name := range strings.Split(fmt.Sprintf(tableHeader, 2), "|") {
		printed[strings.TrimSpace(name)] = true
	}
	for _, m := range read {
		if !printed[m[1]] {
			t.Errorf("compare.sh reads column %q, which the bench does not print", m[1])
		}
	}
}

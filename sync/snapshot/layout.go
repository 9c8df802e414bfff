package snapshot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Layout of a destination:
//
//	<table>/<id>/part-00000.parquet
//	<table>/current               (a local link to <id>; on S3, copies: current/part-00000.parquet)
//	_manifests/<id>.json
//
// where <id> is the snapshot's start in UTC, to the second
// (20261122T101500Z), with "-01" … "-99" appended when an earlier snapshot
// already took that second.
const (
	manifestDir = "_manifests"
	currentName = "current" // the stable name of a table's newest complete snapshot; not an id, so outside the layout
	idLayout    = "20060102T150405Z"
	maxSuffix   = 99
)

var (
	idPattern    = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9]{2})?$`)
	tablePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// validID reports whether id has the form of a snapshot id.
func validID(id string) bool { return idPattern.MatchString(id) }

// manifestName is the name of the manifest of snapshot id.
func manifestName(id string) string { return manifestDir + "/" + id + ".json" }

// partName is the name of the n-th file of a table in snapshot id.
func partName(table, id string, n int) string {
	return fmt.Sprintf("%s/%s/part-%05d.parquet", table, id, n)
}

// entryID returns the snapshot id an entry belongs to and whether it is a
// manifest. ok is false for names outside the layout, which are never
// touched.
func entryID(name string) (id string, manifest, ok bool) {
	first, rest, found := strings.Cut(name, "/")
	if !found {
		return "", false, false
	}
	if first == manifestDir {
		base := strings.TrimPrefix(rest, ".")
		id, _, found = strings.Cut(base, ".json")
		return id, true, found && validID(id) && !strings.Contains(rest, "/")
	}
	id, file, found := strings.Cut(rest, "/")
	return id, false, found && tablePattern.MatchString(first) && validID(id) && !strings.Contains(file, "/")
}

// nextID returns the id of a snapshot started at now, given the entries
// already stored and the complete snapshots set aside as dated in the future
// (futureIDs). It sorts after every snapshot of its second (complete or not),
// and after the newest complete one: when that one is from a later second
// (a clock up to maxSkew ahead), it takes that second.
func nextID(now time.Time, entries []Entry, future map[string]bool) (string, error) {
	base := now.UTC().Format(idLayout)
	if ids := currentIDs(entries, future); len(ids) > 0 && ids[len(ids)-1][:len(base)] > base {
		base = ids[len(ids)-1][:len(base)]
	}
	suffix := -1 // highest suffix seen in base's second; 0 = the plain id
	for _, e := range entries {
		id, _, ok := entryID(e.Name)
		if !ok || !strings.HasPrefix(id, base) {
			continue
		}
		n := 0
		if len(id) > len(base) {
			n, _ = strconv.Atoi(id[len(base)+1:]) // two digits, checked by validID
		}
		suffix = max(suffix, n)
	}
	switch {
	case suffix < 0:
		return base, nil
	case suffix >= maxSuffix:
		return "", fmt.Errorf("more than %d snapshots started in second %s", maxSuffix+1, base)
	}
	return fmt.Sprintf("%s-%02d", base, suffix+1), nil
}

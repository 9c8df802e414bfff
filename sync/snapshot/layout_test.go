package snapshot

import (
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema"
)

func TestEntryID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		id       string
		manifest bool
		ok       bool
	}{
		{"users/20261122T101500Z/part-00000.parquet", "20261122T101500Z", false, true},
		{"users_current/20261122T101500Z-07/.part-00001.parquet.tmp-abc", "20261122T101500Z-07", false, true},
		{"_manifests/20261122T101500Z.json", "20261122T101500Z", true, true},
		{"_manifests/.20261122T101500Z-01.json.tmp-0a0b", "20261122T101500Z-01", true, true},
		{"README.txt", "", false, false},
		{"users/latest/part-00000.parquet", "", false, false},
		{"users/20261122T101500Z/nested/part.parquet", "", false, false},
		{"Users/20261122T101500Z/part-00000.parquet", "", false, false},
		{"_manifests/notes.json", "", true, false},
		{"users/20261122T101500Z-1/part-00000.parquet", "", false, false},
	} {
		id, manifest, ok := entryID(tc.name)
		if ok != tc.ok || (ok && (id != tc.id || manifest != tc.manifest)) {
			t.Errorf("entryID(%q) = %q, %t, %t; want %q, %t, %t", tc.name, id, manifest, ok, tc.id, tc.manifest, tc.ok)
		}
	}
}

func TestNextID(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 15, 0, 999, time.FixedZone("CET", 3600))
	entry := func(name string) Entry { return Entry{Name: name} }
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"empty", nil, "20261122T091500Z"},
		{"older snapshots", []Entry{entry("_manifests/20261122T091400Z.json"), entry("users/20261122T091459Z/part-00000.parquet")},
			"20261122T091500Z"},
		{"same second, complete", []Entry{entry("_manifests/20261122T091500Z.json")}, "20261122T091500Z-01"},
		{"same second, leftover folder", []Entry{entry("teams/20261122T091500Z/part-00000.parquet")}, "20261122T091500Z-01"},
		{"same second, several", []Entry{entry("_manifests/20261122T091500Z.json"), entry("users/20261122T091500Z-04/x.parquet"),
			entry("_manifests/20261122T091500Z-02.json")}, "20261122T091500Z-05"},
		{"a complete snapshot from a later second, within maxSkew: its second, after it",
			[]Entry{entry("_manifests/20261122T091501Z.json")}, "20261122T091501Z-01"},
		{"a complete snapshot dated past maxSkew is set aside", []Entry{entry("_manifests/20261122T101500Z.json"),
			entry("_manifests/20261122T091400Z.json")}, "20261122T091500Z"},
		{"a leftover from a later second is ignored", []Entry{entry("users/20261122T091501Z/part-00000.parquet")},
			"20261122T091500Z"},
		{"a temporary manifest from a later second is ignored", []Entry{{Name: "_manifests/.20261122T091501Z.json.tmp-1", Partial: true}},
			"20261122T091500Z"},
	} {
		got, err := nextID(now, tc.entries, futureIDs(tc.entries, now))
		if err != nil || got != tc.want {
			t.Errorf("%s: nextID = %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if got != "" && !validID(got) {
			t.Errorf("%s: %q is not a valid id", tc.name, got)
		}
	}
	full := []Entry{{Name: "_manifests/20261122T091500Z-99.json"}}
	if _, err := nextID(now, full, nil); err == nil || !strings.Contains(err.Error(), "more than 100 snapshots") {
		t.Errorf("nextID after -99: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "/abs", "../up", "a/../b", "a//b", ".", "..", `a\b`, "a/"} {
		if checkName(name) == nil {
			t.Errorf("checkName(%q) accepted it", name)
		}
	}
	for _, name := range []string{"a", "users/20261122T101500Z/part-00000.parquet", "_manifests/x.json"} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v", name, err)
		}
	}
}

func TestParseDestination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		url  string
		s3   S3Options
		want string // String() of the destination, or the error's text
		err  bool
	}{
		{url: dir, want: dir},
		{url: "file://" + dir, want: dir},
		{url: "s3://bucket", want: "s3://bucket"},
		{url: "s3://bucket/a/b/", want: "s3://bucket/a/b"},
		{url: "s3://bucket/p", s3: S3Options{Endpoint: "http://127.0.0.1:9000", PathStyle: true}, want: "s3://bucket/p"},
		{url: "s3://bucket/p", s3: S3Options{Endpoint: "minio.internal:9000", AccessKeyID: "k", SecretAccessKey: "s"}, want: "s3://bucket/p"},
		{url: "s3:///prefix", want: "needs a bucket", err: true},
		{url: "s3://bucket", s3: S3Options{PartSize: 1 << 20}, want: "part size must be at least", err: true},
		{url: "s3://bucket", s3: S3Options{Endpoint: "ftp://x"}, want: "must be host[:port]", err: true},
		{url: "gs://bucket", want: "unsupported scheme", err: true},
		{url: "file://host/x", want: "local path", err: true},
		{url: "", want: "empty", err: true},
	} {
		d, err := ParseDestination(tc.url, tc.s3)
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseDestination(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		case !tc.err && err != nil:
			t.Errorf("ParseDestination(%q): %v", tc.url, err)
		case !tc.err && d.String() != tc.want:
			t.Errorf("ParseDestination(%q) is %s, want %s", tc.url, d, tc.want)
		}
	}
}

// TestCheckDestination: credentials in an s3:// URL and bucket names S3
// would refuse are caught before anything is written, and no error quotes
// the password.
func TestCheckDestination(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want string // "" for valid, else a part of the error
	}{
		{"s3://analytics/usersync", ""},
		{"s3://my.bucket-1", ""},
		{"s3://abc/", ""},
		{"/var/lib/usersync/snapshots", ""},
		{"snapshots", ""},
		{"file:///var/lib/usersync", ""},
		{"s3://user:hunter2pass@analytics/usersync", "credentials"},
		{"s3://user@analytics", "credentials"},
		{"s3://AKIA:pa/ss@analytics/p", "credentials"}, // a '/' in the password moves the apparent host
		{"s3://AKIA:p@ss@analytics", "credentials"},
		{"s3://ab", "shorter than 3"},
		{"s3://" + strings.Repeat("a", 64), "longer than 63"},
		{"s3://Analytics", "invalid characters"},
		{"s3://my_bucket", "invalid characters"},
		{"s3://-bucket", "invalid characters"},
		{"s3://bucket-", "invalid characters"},
		{"s3://my..bucket", "invalid characters"},
		{"s3://192.168.10.1", "ip address"},
		{"s3:///prefix", "needs a bucket"},
		{"https://user:hunter2pass@host/x", "unsupported scheme \"https\""},
		{"file://user:hunter2pass@host/x", "local path"},
		{"", "empty"},
	} {
		err := CheckDestination(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckDestination(%q): %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckDestination(%q) = %v, want an error containing %q", tc.url, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "hunter2pass") || strings.Contains(err.Error(), "pa/ss") || strings.Contains(err.Error(), "p@ss")):
			t.Errorf("CheckDestination(%q) echoes the password: %v", tc.url, err)
		}
		if tc.want == "" {
			continue // valid: ParseDestination would create the folder
		}
		if _, perr := ParseDestination(tc.url, S3Options{}); perr == nil || !strings.Contains(perr.Error(), tc.want) {
			t.Errorf("ParseDestination(%q) = %v, want an error containing %q", tc.url, perr, tc.want)
		}
	}
}

func TestS3OptionsStringRedactsSecret(t *testing.T) {
	t.Parallel()
	s := S3Options{AccessKeyID: "AKID", SecretAccessKey: "very-secret", SessionToken: "tok"}.String()
	if strings.Contains(s, "very-secret") || strings.Contains(s, "tok") || !strings.Contains(s, "AKID") {
		t.Errorf("String() = %s", s)
	}
}

// TestSnapshotsLeaveBookkeepingOut: the content and linkage hashes, which
// analysts have no use for, are in no snapshot table (issue 37), and every
// other column of users is.
func TestSnapshotsLeaveBookkeepingOut(t *testing.T) {
	t.Parallel()
	tables, err := snapshotTables(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		for _, c := range tb.Columns {
			if c.Name == "content_hash" || c.Name == "linkage_hash" {
				t.Errorf("snapshots of %s hold %s", tb.Name, c.Name)
			}
		}
		if tb.Name == "users" {
			all, _ := schema.TableNamed("users")
			if len(tb.Columns) != len(all.Columns)-2 {
				t.Errorf("snapshots of users hold %d of its %d columns, want all but the two hashes", len(tb.Columns), len(all.Columns))
			}
		}
	}
}

package snapshot

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
)

// Destination is where snapshots are stored: a local folder (Local) or an
// S3-compatible bucket (S3). Names are slash-separated paths relative to the
// destination's root, e.g. "users/20261122T101500Z/part-00000.parquet".
type Destination interface {
	// Create starts writing the object name. Nothing appears under name
	// until Commit returns nil; Abort (or a crash) leaves at most a partial
	// entry that List reports with Partial set.
	Create(ctx context.Context, name string) (Object, error)
	// Open reads a committed object.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// List returns every entry whose name starts with prefix, partial ones
	// included, in no particular order.
	List(ctx context.Context, prefix string) ([]Entry, error)
	// Remove deletes an entry returned by List. Removing what is already gone
	// is not an error.
	Remove(ctx context.Context, e Entry) error
	// SetCurrent makes the stable name link ("users/current") show the
	// committed folder target ("users/20261122T101500Z"), whose files are
	// files: a local folder replaces a symbolic link by a rename, so a
	// reader resolves the old folder or the new one; S3, which has neither
	// links nor atomic renames, copies the files under link/ server-side and
	// then removes the copies target does not have.
	SetCurrent(ctx context.Context, link, target string, files []string) error
	// String names the destination for logs and lock keys, without
	// credentials, e.g. "/var/lib/usersync/snapshots" or "s3://bucket/prefix".
	String() string
}

// Object is an object being written. Exactly one of Commit or Abort must be
// called.
type Object interface {
	io.Writer
	// Commit makes the object durable and visible under its name.
	Commit(ctx context.Context) error
	// Abort discards what was written.
	Abort(ctx context.Context) error
}

// Entry is one stored object, or a partial one (a temporary file or an
// unfinished multipart upload) left by an aborted or crashed write.
type Entry struct {
	Name    string // the object's name (for a partial local file, the temporary file's name)
	Size    int64
	Partial bool
	// Target is, for a local stable link (<table>/current, or its temporary
	// name), the snapshot id it points to; empty for every other entry.
	Target string
}

// checkName rejects names that would escape the destination's root or that
// are not in canonical form.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name || name == "." ||
		name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "\\") {
		return fmt.Errorf("invalid object name %q", name)
	}
	return nil
}

// countingWriter counts the bytes written to w and keeps the first error, so
// that an error swallowed by a library above it is still seen.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

package snapshot

import (
	"errors"
	"fmt"
)

// ErrNoSnapshot is returned by Latest when the destination holds no complete
// snapshot (no manifest).
var ErrNoSnapshot = errors.New("no complete snapshot")

// ErrBusy is returned by Write when another Write to the same destination,
// in this or another process sharing the database, is under way.
var ErrBusy = errors.New("another snapshot to this destination is in progress")

// ColumnError says a column of the database cannot be written as the catalog
// describes it: a type that does not match, a NULL in a NOT NULL column, or a
// value Parquet cannot hold.
type ColumnError struct {
	Table  string
	Column string
	Err    error
}

// Error names the column and the problem.
func (e *ColumnError) Error() string {
	return fmt.Sprintf("column %s.%s: %v", e.Table, e.Column, e.Err)
}

// Unwrap returns the problem, for errors.Is.
func (e *ColumnError) Unwrap() error { return e.Err }

// LinkError is a symbolic link under a local snapshot folder other than a
// table's stable link: Write refuses, naming it, because following it could
// lead retention to delete files elsewhere and skipping it would keep its
// snapshots, with personal data, past their retention.
type LinkError struct {
	Path   string // the link, absolute
	Target string // where it points, as read from the link
}

// Error names the link and says what to do.
func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %s): snapshots do not follow or remove links under the snapshot folder; "+
		"replace it with a folder, or point the snapshot folder itself at the storage", e.Path, e.Target)
}

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

// LinkError is returned by a local folder's List when it meets a symbolic
// link under the snapshot folder other than a table's stable link (the
// folder itself may be one: NewLocal resolves it). usersync neither follows such a link, which could lead
// retention to remove files outside the snapshot folder, nor removes it,
// which would leave what it points to, snapshots with personal data, past
// their retention without a trace: Write refuses, naming the link, until it
// is replaced by a folder.
type LinkError struct {
	Path   string // the link, absolute
	Target string // where it points, as read from the link
}

// Error names the link and says what to do.
func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %s): snapshots do not follow or remove links under the snapshot folder; "+
		"replace it with a folder, or point the snapshot folder itself at the storage", e.Path, e.Target)
}

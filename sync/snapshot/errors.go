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

// ClockError is returned by Write when the destination already holds a
// complete snapshot named after a later second than the clock's now, so a
// new snapshot would not sort last.
type ClockError struct {
	ID     string // the id the clock gives
	Newest string // the newest complete snapshot
}

// Error describes the two ids.
func (e *ClockError) Error() string {
	return fmt.Sprintf("the clock is behind the newest snapshot: now is %s, newest is %s", e.ID, e.Newest)
}

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

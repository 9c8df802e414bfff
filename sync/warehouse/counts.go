package warehouse

import (
	"time"

	"github.com/usersync/usersync/sync/warehouse/pgrow"
)

// Quarantined is a resource that could not be typed, kept whole.
type Quarantined struct {
	Type  string // JSON:API type
	ID    string // the id as sent
	Field string // what could not be typed
	Error string // why
	Raw   []byte // the whole resource as JSON
}

// Counts are what a load did: one page, one dimension list, or (summed in
// Progress) a whole run. It is the one counts type of the run, its
// checkpoint, its summary, status, the --json outputs and the metrics.
type Counts struct {
	Inserted    int64 `json:"inserted"`
	Updated     int64 `json:"updated"`
	Unchanged   int64 `json:"unchanged"`
	Quarantined int64 `json:"quarantined"`
	Versions    int64 `json:"versions"` // user_versions rows written
	Deleted     int64 `json:"deleted"`  // ids marked deleted
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Unchanged += o.Unchanged
	c.Quarantined += o.Quarantined
	c.Versions += o.Versions
	c.Deleted += o.Deleted
}

// Checkpoint is a run's progress, written in the same transaction as the
// page it follows, so a crashed run resumes exactly after its last page.
type Checkpoint struct {
	RunID int64
	// PolicyID is the personal-data policy the run writes under
	// (Personal.NotePolicy's id; 0: not recorded), stored with each user.
	PolicyID     int64
	NextURL      string    // "" when the run has read its last page
	MaxUpdatedAt time.Time // greatest updatedAt committed so far (zero: none), up to Horizon
	// Horizon, when set, is the latest updatedAt that may become
	// MaxUpdatedAt (and so the watermark): a later one is stored, but
	// would make incremental syncs ask only for changes after it.
	Horizon time.Time
	// NoUnresolved says no user had an unresolved quarantine record when
	// the run began, and its pages quarantined none since: a page then has
	// no record to resolve. False (the zero value) resolves, as ever.
	NoUnresolved bool
	Progress     Progress // cumulative counters of the run
}

// Writer is what a page written under cp is written by: its run and policy.
func (cp *Checkpoint) Writer() pgrow.Writer { return pgrow.Writer{Run: cp.RunID, Policy: cp.PolicyID} }

// Progress is a run's cumulative counters, saved with each checkpoint.
type Progress struct {
	Pages   int64 `json:"pages"`
	Fetched int64 `json:"fetched"`
	Counts
	Requests    int64          `json:"requests"`
	RateLimited int64          `json:"rate_limited"`
	Retries     int64          `json:"retries"`
	Unknown     map[string]int `json:"unknown_attributes"`
}

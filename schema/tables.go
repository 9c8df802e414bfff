package schema

// Table describes a warehouse table or view beyond the catalog's resources:
// its meaning and the meaning of each column, used for COMMENT ON, for the
// analysts' grants and for the generated documentation.
type Table struct {
	Name    string
	View    bool
	Meaning string
	Columns []Column // every column, in table order
	// Analysts says whether the read-only analysts' role may read it.
	Analysts bool
	// Snapshot says whether Parquet snapshots include it.
	Snapshot bool
}

// Column is one column of a Table.
type Column struct {
	Name     string
	Type     string // Postgres type
	Nullable bool
	Meaning  string
	// Bookkeeping marks usersync's own state of a row (the content and
	// linkage hashes): analysts have no use for it, and snapshots leave
	// it out (Table.SnapshotColumns).
	Bookkeeping bool
}

// SnapshotColumns returns the columns a snapshot of t holds: every column
// but the bookkeeping ones, in table order.
func (t Table) SnapshotColumns() []Column {
	out := make([]Column, 0, len(t.Columns))
	for _, c := range t.Columns {
		if !c.Bookkeeping {
			out = append(out, c)
		}
	}
	return out
}

func resourceColumns(r Resource, withKey bool) []Column {
	var cols []Column
	if withKey {
		cols = append(cols, Column{Name: "id", Type: "bigint", Meaning: "the API's id of the " + r.Type})
	}
	for _, a := range r.Attributes {
		cols = append(cols, Column{Name: a.Column(), Type: a.Type.PostgresType(), Nullable: true, Meaning: attributeComment(a)})
	}
	for _, rel := range r.ToOne() {
		cols = append(cols, Column{Name: rel.Column(), Type: "bigint", Nullable: true,
			Meaning: "id of the related " + rel.RelatedType + " (relationship " + rel.Name + "): " + rel.Meaning})
	}
	return cols
}

func attributeComment(a Attribute) string {
	s := a.Meaning + " (API attribute " + a.Name
	if a.MaxLength > 0 {
		s += ", at most " + itoa(a.MaxLength) + " characters"
	}
	if len(a.Enum) > 0 {
		s += ", one of"
		for i, v := range a.Enum {
			if i > 0 {
				s += ","
			}
			s += " " + v
		}
	}
	return s + ")"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

var (
	rawColumn             = Column{Name: "raw", Type: "jsonb", Meaning: "the attributes the API sent that the catalog does not know (schema drift), exactly as sent; {} when none. With the typed columns it holds every attribute the API sent"}
	syncedColumn          = Column{Name: "synced_at", Type: "timestamptz", Meaning: "when usersync last wrote this row"}
	deletedColumn         = Column{Name: "deleted_at", Type: "timestamptz", Nullable: true, Meaning: "when usersync found the id gone from the API (soft delete); null while the API returns it"}
	hashColumn            = Column{Name: "content_hash", Type: "bytea", Bookkeeping: true, Meaning: "SHA-256 of the row's stored content (attributes after the personal-data policy, raw, to-one ids, data connections): it tells nothing the row does not; a new value means a new version. A row cleared by usersync forget holds a marker (usersync:erased and its updated_at) instead. Not in snapshots"}
	dataConnectionsColumn = Column{Name: "data_connections", Type: "jsonb", Nullable: true,
		Meaning: "the user's connections to external systems (the API's meta.dataConnections), as last sent; null until a sync requested them"}
	linkageColumn    = Column{Name: "linkage_hash", Type: "bytea", Nullable: true, Bookkeeping: true, Meaning: "SHA-256 of the to-many linkage last written (user_teams, the *_ids columns, other_relationships); lets unchanged linkage be skipped. Not in snapshots"}
	otherLinksColumn = Column{Name: "other_relationships", Type: "jsonb", Nullable: true,
		Meaning: "linkage the catalog has no column for (relationships it does not know, or identifiers of another type than the catalog's), as {relationship: [{type, id}, ...]}; null when none"}
	userIDColumn   = Column{Name: "user_id", Type: "bigint", Meaning: "id of the user"}
	runIDColumn    = Column{Name: "run_id", Type: "bigint", Nullable: true, Meaning: "the sync run (sync_runs.run_id) that wrote the row"}
	timestampNNull = "timestamptz"
	// piiPolicyColumn is on every table of users' personal values (migration 0009).
	piiPolicyColumn = Column{Name: "pii_policy_id", Type: "bigint", Nullable: true,
		Meaning: "the personal-data policy (pii_policies.policy_id) the row's personal values were last written under, by a sync or usersync pii apply: which attributes hold a keyed hash and under which key; null for a row written before usersync recorded it (migration 0009)"}
)

// Tables returns every table and view of the warehouse with its meaning and
// columns, in migration order. The migration test holds it against the
// migrated database, so it cannot drift.
func Tables() []Table {
	u := User()
	users := resourceColumns(u, true)
	users = append(users, rawColumn, hashColumn, linkageColumn, syncedColumn, deletedColumn, dataConnectionsColumn,
		Column{Name: "version_id", Type: "bigint", Meaning: "the user_versions.version_id of the row's content: the user's current version"},
		Column{Name: "version_valid_from", Type: timestampNNull, Meaning: "when usersync first saw the row's content (user_versions.valid_from of the current version)"},
		Column{Name: "version_run_id", Type: "bigint", Nullable: true, Meaning: "the sync run that wrote the row's content first (user_versions.run_id of the current version)"})
	for _, rel := range u.ArrayLinks() {
		users = append(users, Column{Name: rel.Column(), Type: "bigint[]", Nullable: true,
			Meaning: "ids of the related " + rel.RelatedType + " resources (relationship " + rel.Name + "), as last sent, without repeats; null until the API sent the linkage: " + rel.Meaning})
	}
	users = append(users, otherLinksColumn, piiPolicyColumn)

	versions := []Column{
		{Name: "version_id", Type: "bigint", Meaning: "identity of the version row"},
		userIDColumn, hashColumn,
	}
	versions = append(versions, resourceColumns(u, false)...)
	versions = append(versions, rawColumn,
		Column{Name: "valid_from", Type: timestampNNull, Meaning: "when usersync first saw this version (warehouse time)"},
		Column{Name: "valid_to", Type: timestampNNull, Nullable: true, Meaning: "when a newer version replaced it; null for the current version"},
		runIDColumn, dataConnectionsColumn)

	versionView := make([]Column, len(versions))
	for i, c := range versions {
		c.Nullable = true // a view's columns are always reported nullable
		versionView[i] = c
	}
	versions = append(versions, piiPolicyColumn) // not in the view, which migration 0009 left as it was
	out := []Table{
		{Name: "users", Meaning: u.Meaning, Columns: users, Analysts: true, Snapshot: true},
		{Name: "user_version_history", Meaning: "The superseded versions of users (valid_to set); the current version of each user is its users row. Query user_versions, which unites both.", Columns: versions, Analysts: true},
		{Name: "user_versions", View: true, Meaning: "History of users: one row per distinct version of a user's content, valid from valid_from until valid_to (null for the current version). Unites user_version_history and the current versions held in users.", Columns: versionView, Analysts: true, Snapshot: true},
	}
	for _, r := range Dimensions() {
		cols := append(resourceColumns(r, true), rawColumn, syncedColumn, deletedColumn, Column{Name: "version_valid_from", Type: timestampNNull,
			Meaning: "when usersync first saw the row's current content (" + r.Type + "_versions.valid_from of the current version)"})
		out = append(out, Table{Name: r.Table, Meaning: r.Meaning, Columns: cols, Analysts: true, Snapshot: true})
	}
	out = append(out, bookkeepingTables()...)
	out = append(out, historyTables()...)
	return append(out, personalTables()...)
}

// TableNamed returns the table or view with the given name.
func TableNamed(name string) (Table, bool) {
	for _, t := range Tables() {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

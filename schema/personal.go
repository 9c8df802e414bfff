package schema

// personalTables are the tables of the personal-data policy (migrations
// 0007 and 0008): the erasure audit, the policies written under, the
// progress of usersync pii apply and of the content hashes' upgrade. None is
// granted to analysts or snapshotted.
func personalTables() []Table {
	ts := "timestamptz"
	return []Table{
		{Name: "erasures",
			Meaning: "Audit of usersync forget: one row per user erased, with when, by which database role and how much was removed; no personal data.",
			Columns: []Column{
				{Name: "erasure_id", Type: "bigint", Meaning: "identity of the erasure"},
				userIDColumn,
				{Name: "erased_at", Type: ts, Meaning: "when the erasure committed"},
				{Name: "erased_by", Type: "text", Meaning: "the database role that ran usersync forget"},
				{Name: "found", Type: "boolean", Meaning: "whether the warehouse held anything of the user"},
				{Name: "versions_deleted", Type: "bigint", Meaning: "superseded versions deleted from user_version_history"},
				{Name: "quarantine_deleted", Type: "bigint", Meaning: "quarantine records of the user deleted"},
				{Name: "columns_cleared", Type: "bigint", Meaning: "personal columns of the current row set to null"},
			}},
		{Name: "pii_policies",
			Meaning: "Each personal-data policy rows were written under: attribute names and a key id only, never the key.",
			Columns: []Column{
				{Name: "fingerprint", Type: "text", Meaning: "the policy in one line: hashed and dropped attributes, unknown attributes kept or dropped, key id"},
				{Name: "hashed", Type: "text[]", Meaning: "API names of the attributes stored as a keyed hash (HMAC-SHA256, hex)"},
				{Name: "dropped", Type: "text[]", Meaning: "API names of the attributes never stored"},
				{Name: "drop_unknown", Type: "boolean", Meaning: "whether attributes the catalog does not know were kept out of raw"},
				{Name: "key_id", Type: "text", Nullable: true, Meaning: "an id of the hashing key (an HMAC of a constant under the key), not the key; null without a key"},
				{Name: "first_used_at", Type: ts, Meaning: "when a run or pii apply first wrote under the policy"},
				{Name: "last_used_at", Type: ts, Meaning: "when a run or pii apply last wrote under the policy (a run refreshes it when over an hour old)"},
				{Name: "policy_id", Type: "bigint", Meaning: "identity of the policy, named by the pii_policy_id of the rows written under it (migration 0009)"},
			}},
		{Name: "pii_apply",
			Meaning: "Progress of usersync pii apply, one row per policy applied: the table being rewritten and the last id done, so a killed run resumes.",
			Columns: []Column{
				{Name: "fingerprint", Type: "text", Meaning: "the policy being applied (pii_policies.fingerprint)"},
				{Name: "phase", Type: "text", Meaning: "the table being rewritten (users, user_version_history, quarantine), or done"},
				{Name: "last_id", Type: "bigint", Meaning: "the last id of the phase's table rewritten"},
				{Name: "rewritten", Type: "bigint", Meaning: "rows rewritten so far, over every phase"},
				{Name: "started_at", Type: ts, Meaning: "when the apply started"},
				{Name: "updated_at", Type: ts, Meaning: "when a batch last committed"},
				{Name: "finished_at", Type: ts, Nullable: true, Meaning: "when the apply finished; null while it runs or was stopped"},
				{Name: "kept_other_key", Type: "bigint", Meaning: "values left as they were because the row's policy hashed them under another key (a hash cannot be re-keyed), over every phase"},
			}},
		{Name: "content_rehash",
			Meaning: "Progress of the upgrade of content_hash to a hash of the stored row (migration 0008): one row per table, done by usersync migrate a batch at a time.",
			Columns: []Column{
				{Name: "table_name", Type: "text", Meaning: "users or user_version_history"},
				{Name: "last_key", Type: "bigint", Meaning: "the last id (users) or version_id (user_version_history) whose hash was computed again"},
				{Name: "finished_at", Type: ts, Nullable: true, Meaning: "when the table was done; null while some rows hold the old hash"},
			}},
	}
}

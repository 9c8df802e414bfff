package schema

func bookkeepingTables() []Table {
	ts := "timestamptz"
	userView := []Column{{Name: "id", Type: "bigint", Meaning: "the API's id of the user"}}
	userView = append(userView, resourceColumns(User(), false)...)
	userView = append(userView,
		Column{Name: "role_name", Type: "text", Nullable: true, Meaning: "name of the user's role"},
		Column{Name: "profile_name", Type: "text", Nullable: true, Meaning: "name of the user's profile"},
		Column{Name: "team_ids", Type: "bigint[]", Nullable: true, Meaning: "ids of the live teams the user belongs to, ordered like team_names"},
		Column{Name: "team_names", Type: "text[]", Nullable: true, Meaning: "names of the live teams the user belongs to, in name order"},
		syncedColumn, dataConnectionsColumn)
	for i := range userView {
		userView[i].Nullable = true // a view's columns are always reported nullable
	}
	return []Table{
		{Name: "user_teams", Analysts: true, Snapshot: true,
			Meaning: "Team membership today: one row per user and team, from the user's teams relationship (or, when the API sends it without data, from listing each team's members); only live users have rows. Ended memberships are in user_team_history; query user_team_versions for both.",
			Columns: []Column{
				userIDColumn,
				{Name: "team_id", Type: "bigint", Meaning: "id of the team (teams.id)"},
				syncedColumn,
				{Name: "valid_from", Type: "timestamptz", Meaning: "when usersync first saw this membership, since it last began (user_team_versions.valid_from of the open interval)"},
			}},
		{Name: "user_relationships", View: true, Analysts: true, Snapshot: true,
			Meaning: "Every other linkage of a user (to-many relationships besides teams, and relationships the catalog does not know), one row per related id: the users' *_ids columns and other_relationships, unnested.",
			Columns: nullable([]Column{
				userIDColumn,
				{Name: "relationship", Type: "text", Meaning: "the relationship's API name, e.g. mailboxes or contentCategories"},
				{Name: "related_type", Type: "text", Meaning: "the JSON:API type of the related resource"},
				{Name: "related_id", Type: "bigint", Meaning: "the id of the related resource"},
				{Name: "synced_at", Type: "timestamptz", Meaning: "when usersync last wrote the user's row"},
			})},
		{Name: "sync_runs", Analysts: true,
			Meaning: "One row per sync, backfill or reconcile run: its outcome, checkpoint and counters.",
			Columns: []Column{
				{Name: "run_id", Type: "bigint", Meaning: "identity of the run"},
				{Name: "kind", Type: "text", Meaning: "incremental, full, backfill or reconcile"},
				{Name: "status", Type: "text", Meaning: "running, succeeded, failed (an error or a job timeout stopped it), paused (stopped to wait for the API's rate limit), interrupted (its process was stopped: Ctrl-C, SIGTERM, a deploy; not a failure) or abandoned (a crashed run whose work a later run resumed); the next run of its kind resumes a failed, paused or interrupted one"},
				{Name: "started_at", Type: ts, Meaning: "when the run started"},
				{Name: "finished_at", Type: ts, Nullable: true, Meaning: "when the run ended; null while running"},
				{Name: "heartbeat_at", Type: ts, Meaning: "when the run last committed a page"},
				{Name: "range_from", Type: ts, Nullable: true, Meaning: "lower bound of updatedAt requested (watermark minus lookback, or --since)"},
				{Name: "range_until", Type: ts, Nullable: true, Meaning: "upper bound of updatedAt requested (--until); null for open-ended runs"},
				{Name: "next_url", Type: "text", Nullable: true, Meaning: "checkpoint: the users URL to resume from after the last committed page (the next link's cursor and usersync's own query parameters, on the configured API URL)"},
				{Name: "max_updated_at", Type: ts, Nullable: true, Meaning: "greatest updatedAt committed by the run so far"},
				{Name: "pages", Type: "bigint", Meaning: "pages committed"},
				{Name: "fetched", Type: "bigint", Meaning: "resources received"},
				{Name: "inserted", Type: "bigint", Meaning: "rows inserted"},
				{Name: "updated", Type: "bigint", Meaning: "rows whose content changed"},
				{Name: "unchanged", Type: "bigint", Meaning: "rows received with no change"},
				{Name: "quarantined", Type: "bigint", Meaning: "resources sent to quarantine"},
				{Name: "deleted", Type: "bigint", Meaning: "ids marked deleted"},
				{Name: "undeleted", Type: "bigint", Meaning: "ids that came back and were unmarked"},
				{Name: "requests", Type: "bigint", Meaning: "API requests sent, those of a run that did not succeed included"},
				{Name: "rate_limited", Type: "bigint", Meaning: "429 responses received"},
				{Name: "retries", Type: "bigint", Meaning: "requests retried after a fault"},
				{Name: "unknown_attributes", Type: "jsonb", Meaning: "attributes the catalog does not know, with how often each was seen (schema drift)"},
				{Name: "can_write", Type: "boolean", Nullable: true, Meaning: "whether the API user had write access to users, as last reported by the API"},
				{Name: "job_id", Type: "bigint", Nullable: true, Meaning: "the River job that ran it, if any"},
				{Name: "error", Type: "text", Nullable: true, Meaning: "the error that ended a failed run, or why a paused or interrupted one stopped"},
				{Name: "summary", Type: "jsonb", Meaning: "the run's full summary as printed by usersync sync --json; of a run that did not succeed, only rate_limit, the API's rate limit as the run last saw it (when it saw one), and credentials_refused (status, OAuth code) when the API or its token endpoint refused the credentials"},
				{Name: "versions", Type: "bigint", Meaning: "user versions written (rows of user_versions)"},
			}},
		{Name: "sync_state", Analysts: true,
			Meaning: "The committed watermark of each stream: the greatest updatedAt of a run that finished; the digest of each dimension list last applied; the users page a repeated no-op sync continues from.",
			Columns: []Column{
				{Name: "stream", Type: "text", Meaning: "the stream: users, a dimension table (teams, roles, profiles), or users_page (the one users page of the last incremental run that changed nothing)"},
				{Name: "watermark", Type: ts, Nullable: true, Meaning: "greatest updatedAt committed by a finished run; of users_page, the users watermark its page was read from"},
				{Name: "run_id", Type: "bigint", Nullable: true, Meaning: "the run that moved the watermark; of users_page, the last run that read that page and changed nothing"},
				{Name: "updated_at", Type: ts, Meaning: "when the row last changed"},
				{Name: "digest", Type: "bytea", Nullable: true, Meaning: "of a dimension stream, SHA-256 of the list last applied (an incremental sync that lists the same writes nothing); of users_page, of that page"},
			}},
		{Name: "quarantine", Analysts: true,
			Meaning: "Resources that could not be typed, kept whole with the reason, never dropped.",
			Columns: []Column{
				{Name: "quarantine_id", Type: "bigint", Meaning: "identity of the record"},
				runIDColumn,
				{Name: "resource_type", Type: "text", Meaning: "the JSON:API type, e.g. user"},
				{Name: "resource_id", Type: "text", Nullable: true, Meaning: "the id as sent (text, since it may not be an integer)"},
				{Name: "field", Type: "text", Nullable: true, Meaning: "the attribute or member that could not be typed"},
				{Name: "error", Type: "text", Meaning: "why it could not be typed"},
				{Name: "raw", Type: "jsonb", Meaning: "the whole resource as the API sent it"},
				{Name: "received_at", Type: ts, Meaning: "when it was received"},
				{Name: "resolved_at", Type: ts, Nullable: true, Meaning: "when a later sync typed the same resource successfully"},
				{Name: "pii_policy_id", Type: "bigint", Nullable: true, Meaning: "for a user's record, the personal-data policy (pii_policies.policy_id) raw was last redacted under; null for other types and for records written before usersync recorded it (migration 0009)"},
			}},
		{Name: "oauth_tokens", Analysts: false,
			Meaning: "OAuth credentials of the API client (rotated refresh tokens). Secret: never granted to analysts.",
			Columns: []Column{
				{Name: "token_key", Type: "text", Meaning: "which credential: a digest of the token URL and client id"},
				{Name: "refresh_token", Type: "text", Meaning: "the newest refresh token"},
				{Name: "access_token", Type: "text", Nullable: true, Meaning: "the current access token"},
				{Name: "expires_at", Type: ts, Nullable: true, Meaning: "when the access token expires"},
				{Name: "updated_at", Type: ts, Meaning: "when the credential last changed"},
				{Name: "scope", Type: "text", Nullable: true, Meaning: "the scope the grant holds, as the token endpoint last said (migration 0013)"},
				{Name: "refresh_failed_at", Type: ts, Nullable: true, Meaning: "when the last refresh failed; null once a refresh or a login succeeds"},
				{Name: "refresh_error_code", Type: "text", Nullable: true, Meaning: "the OAuth error code of that failure's refusal (invalid_grant), or empty when the token endpoint did not answer"},
				{Name: "refresh_error", Type: "text", Nullable: true, Meaning: "that failure's error, on one line, without secrets"},
			}},
		{Name: "users_current", View: true, Analysts: true, Snapshot: true,
			Meaning: "Live users (not deleted) with the names of their role, profile and live teams.",
			Columns: userView},
	}
}

// nullable marks columns nullable, as PostgreSQL reports every column of a
// view.
func nullable(cols []Column) []Column {
	for i := range cols {
		cols[i].Nullable = true
	}
	return cols
}

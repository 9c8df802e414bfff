#!/usr/bin/env bash
# The end-to-end demo behind `make demo`: a throwaway PostgreSQL, the built-in
# simulated API with 20,000 users that keeps changing, a full sync, an
# incremental sync that picks up the changes, and what an analyst then sees.
# It authenticates as a real deployment does: OAuth, authorized once with
# `usersync auth login` (here --follow-redirect plays the browser), so the
# syncs run on the stored, rotating refresh token with none in the
# environment. It works in its own schema, usersync_demo, which it recreates
# each time. DEMO_USERS (20000) sets the simulated users, DEMO_SNAPSHOTS
# (.dev/demo-snapshots) where the snapshot goes, USERSYNC_BIN (bin/usersync)
# the binary; a DATABASE_URL that is set is used instead of a throwaway cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${USERSYNC_BIN:-bin/usersync}
export DATABASE_URL=${DATABASE_URL:-$(deploy/dev/postgres.sh up)}
export USERSYNC_SCHEMA=usersync_demo
export USERSYNC_READER_ROLE=usersync_reader
unset USERSYNC_API_TOKEN USERSYNC_OAUTH_REFRESH_TOKEN
export USERSYNC_OAUTH_CLIENT_ID=demo-client
export USERSYNC_OAUTH_CLIENT_SECRET=demo-client-secret # the simulator's; a real one goes in USERSYNC_OAUTH_CLIENT_SECRET_FILE
users=${DEMO_USERS:-20000}
snapshots=${DEMO_SNAPSHOTS:-.dev/demo-snapshots}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
sql() { psql "$DATABASE_URL" -X -q -P pager=off -v ON_ERROR_STOP=1 -c "SET search_path = usersync_demo" -c "$1"; }

port=$(for p in $(seq 18080 18180); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; break; }; done)
export USERSYNC_API_URL="http://127.0.0.1:$port"
export USERSYNC_OAUTH_TOKEN_URL="$USERSYNC_API_URL/oauth/token"

say "simulated API: $users users on $USERSYNC_API_URL (users change every few requests; OAuth)"
"$bin" simulate --addr "127.0.0.1:$port" --users "$users" --seed 42 \
	--client-id "$USERSYNC_OAUTH_CLIENT_ID" --client-secret "$USERSYNC_OAUTH_CLIENT_SECRET" \
	--mutate-every 4 --mutate-update 40 --mutate-create 3 --mutate-delete-every 3 \
	--mutate-memberships 10 --mutate-edit-every 2 --mutate-restore-every 5 --log-level warn &
sim=$!
trap 'kill $sim 2>/dev/null || true; wait $sim 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

say "usersync migrate (schema usersync_demo, fresh)"
psql "$DATABASE_URL" -X -q -c "DROP SCHEMA IF EXISTS usersync_demo CASCADE" -c "DROP SCHEMA IF EXISTS usersync_demo_river CASCADE" 2>/dev/null
"$bin" migrate | grep -v '^  table\|^  view'

say "usersync auth login (the browser's part played by --follow-redirect, for demos only)"
"$bin" auth login --follow-redirect --redirect-port 0
"$bin" auth status

say "usersync sync --full (on the stored token: USERSYNC_OAUTH_REFRESH_TOKEN is not set)"
"$bin" sync --full
# The moment between the two syncs, for the as-of query below.
before=$(psql "$DATABASE_URL" -X -q -A -t -c "SELECT now()")

say "usersync sync (incremental: only what changed since the watermark)"
"$bin" sync

# The simulator changes its data on every fourth request it receives, and an
# incremental sync sends four: the changes made during the one above (users
# moved between teams among them) are picked up by this one at the latest.
say "usersync sync (again: the API keeps changing)"
"$bin" sync

say "usersync status"
"$bin" status --runs 3

say "rows in the warehouse"
sql "SELECT 'users' AS table_name, count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted FROM users
UNION ALL SELECT 'teams', count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM teams
UNION ALL SELECT 'roles', count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM roles
UNION ALL SELECT 'profiles', count(*) FILTER (WHERE deleted_at IS NULL), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM profiles
UNION ALL SELECT 'user_teams', count(*), NULL FROM user_teams
UNION ALL SELECT 'user_relationships', count(*), NULL FROM user_relationships
UNION ALL SELECT 'user_versions', count(*), NULL FROM user_versions
UNION ALL SELECT 'user_team_versions', count(*), NULL FROM user_team_versions
UNION ALL SELECT 'team_versions', count(*), NULL FROM team_versions
UNION ALL SELECT 'quarantine', count(*), NULL FROM quarantine"

say "query 1: live users by team (top 5)"
sql "SELECT team, count(*) AS users FROM users_current, unnest(team_names) AS team GROUP BY team ORDER BY users DESC, team LIMIT 5"

say "query 2: live users by role"
sql "SELECT coalesce(role_name, '(no role)') AS role, count(*) AS users, count(*) FILTER (WHERE locked) AS locked FROM users_current GROUP BY 1 ORDER BY 2 DESC"

say "query 3: users changed in the last hour, with how many versions the warehouse keeps of each"
sql "SELECT u.id, u.name, u.title, u.updated_at, count(v.*) AS versions
FROM users_current u JOIN user_versions v ON v.user_id = u.id
WHERE u.updated_at > now() - interval '1 hour' GROUP BY 1, 2, 3, 4 ORDER BY u.updated_at DESC LIMIT 8"

say "query 4: as of a moment (before the incremental sync) and now: team headcount from the membership history"
sql "SELECT t.name AS team, count(*) FILTER (WHERE m.valid_from <= '$before' AND (m.valid_to IS NULL OR m.valid_to > '$before')) AS members_before,
  count(*) FILTER (WHERE m.valid_to IS NULL) AS members_now,
  count(*) FILTER (WHERE m.valid_from > '$before') AS joined, count(*) FILTER (WHERE m.valid_to > '$before') AS departed
FROM user_team_versions m JOIN teams t ON t.id = m.team_id
GROUP BY t.name HAVING count(*) FILTER (WHERE m.valid_from > '$before' OR m.valid_to > '$before') > 0
ORDER BY count(*) FILTER (WHERE m.valid_from > '$before' OR m.valid_to > '$before') DESC, team LIMIT 8"

say "usersync snapshot (Parquet, zstd, one consistent read of every table)"
rm -rf "$snapshots"
"$bin" snapshot --out "$snapshots"

# The hint reads the snapshot just written, by its id: a glob over every
# snapshot folder would read each snapshot kept, complete or not (README).
id=$(ls "$snapshots/$USERSYNC_SCHEMA/_manifests" | sort | tail -n 1)
id=${id%.json}
say "done: explore with  psql \"$DATABASE_URL\"  then  SET search_path = usersync_demo;"
echo "    or with DuckDB: duckdb -c \"SELECT count(*) FROM read_parquet('$snapshots/$USERSYNC_SCHEMA/users/$id/*.parquet')\""
echo "    (docs/analysts.md makes a view of each table of the newest snapshot, for its example queries)"

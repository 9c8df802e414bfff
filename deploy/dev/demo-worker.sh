#!/usr/bin/env bash
# The daemon demo behind `make demo-worker`: a throwaway PostgreSQL, the
# simulated API changing as it serves, and `usersync worker` syncing on a short
# schedule, with `usersync status` shown as it goes. Stops after DEMO_SECONDS
# (default 40) by sending the worker SIGTERM, the way a deployment would.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${USERSYNC_BIN:-bin/usersync}
export DATABASE_URL=${DATABASE_URL:-$(deploy/dev/postgres.sh up)}
export USERSYNC_SCHEMA=usersync_demo
export USERSYNC_API_TOKEN=demo-token
export USERSYNC_SYNC_SCHEDULE="@every 10s"
export USERSYNC_SCHEDULE_MIN_INTERVAL=10s # a demo; the default refuses schedules under a minute
export USERSYNC_RECONCILE_SCHEDULE=off
export USERSYNC_SNAPSHOT_SCHEDULE=off
export USERSYNC_SNAPSHOT_AFTER_SYNC=false
export USERSYNC_LOG_LEVEL=warn
seconds=${DEMO_SECONDS:-40}

free_port() { for p in $(seq "$1" $(($1 + 100))); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }; done; }
api_port=$(free_port 18080)
http_port=$(free_port 19090)
export USERSYNC_API_URL="http://127.0.0.1:$api_port"
export USERSYNC_HTTP_ADDR="127.0.0.1:$http_port"

"$bin" simulate --addr "127.0.0.1:$api_port" --users 5000 --seed 7 --mutate-every 3 --mutate-update 15 --mutate-create 2 &
sim=$!
worker=""
cleanup() {
	[ -n "$worker" ] && kill -TERM "$worker" 2>/dev/null && wait "$worker" 2>/dev/null || true
	kill "$sim" 2>/dev/null || true
	wait "$sim" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$api_port") 2>/dev/null && break; sleep 0.1; done

psql "$DATABASE_URL" -X -q -c "DROP SCHEMA IF EXISTS usersync_demo CASCADE" -c "DROP SCHEMA IF EXISTS usersync_demo_river CASCADE" 2>/dev/null || true
"$bin" migrate >/dev/null
echo "worker: syncs every 10s; health, metrics and the job UI on http://$USERSYNC_HTTP_ADDR (/healthz /readyz /metrics /riverui/)"
"$bin" worker &
worker=$!

end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
	sleep 10
	printf '\n== usersync status (%ss left)\n' $((end - SECONDS))
	"$bin" status --runs 4
done
printf '\n== a few metrics\n'
(exec 3<>"/dev/tcp/127.0.0.1/$http_port"; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) | grep -E '^usersync_(runs_total|rows_total|watermark_lag|jobs)' | head -12
printf '\n== stopping the worker with SIGTERM\n'
kill -TERM "$worker"; wait "$worker" && echo "worker exited 0"; worker=""

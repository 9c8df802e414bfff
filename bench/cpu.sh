#!/usr/bin/env bash
# bench/cpu.sh N [SCHEMA]: a full backfill of N simulated users with the real
# binary, reporting the CPU time of each process: usersync, the PostgreSQL
# server (as the bench reads it: see server below; before 2026-11-26 12:20
# UTC its exited processes only) and the simulator (its own process). Uses the throwaway cluster
# (deploy/dev/postgres.sh); run from the repository, on an otherwise idle
# machine. Extra environment (GODEBUG=gctrace=1, ...) is passed to usersync;
# USERSYNC_LOG_LEVEL=debug prints the run's timeline (run started, each page
# committed, the team_id index, run finished) beside the wall time.
set -euo pipefail
n=${1:?usage: bench/cpu.sh USERS [SCHEMA]}
schema=${2:-cpu_bench}
port=${CPU_BENCH_PORT:-58131}
bin=$(mktemp -d)/usersync
CGO_ENABLED=0 go build -o "$bin" ./cmd/usersync
url=$(deploy/dev/postgres.sh up)
pm=$(head -1 "$(psql "$url" -Atc 'show data_directory')/postmaster.pid")
own() { awk '{split($0, a, ") "); split(a[2], f, " "); print (f[12] + f[13]) / 100}' "/proc/$1/stat"; }
# server PID: the server's CPU so far, as the bench reads it: the postmaster's
# own, its exited children's and its running children's (the checkpointer,
# the WAL writer, autovacuum workers).
server() {
	local t c
	t=$(awk '{split($0, a, ") "); split(a[2], f, " "); print (f[12] + f[13] + f[14] + f[15]) / 100}' "/proc/$1/stat")
	for c in $(cat "/proc/$1/task/$1/children"); do
		t="$t + $(own "$c" 2>/dev/null || echo 0)"
	done
	echo "$t" | bc
}
"$bin" simulate --addr "127.0.0.1:$port" --users "$n" --seed 1 >/dev/null 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -rf "$(dirname "$bin")"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/api/v2/roles" -H 'Authorization: Bearer x' && break; sleep 0.2; done
export DATABASE_URL=$url USERSYNC_SCHEMA=$schema USERSYNC_READER_ROLE= USERSYNC_API_URL=http://127.0.0.1:$port \
  USERSYNC_API_TOKEN=x USERSYNC_LOG_LEVEL=${USERSYNC_LOG_LEVEL:-warn}
psql "$url" -qc "DROP SCHEMA IF EXISTS \"$schema\" CASCADE; DROP SCHEMA IF EXISTS \"${schema}_river\" CASCADE"
"$bin" migrate >/dev/null
psql "$url" -qc CHECKPOINT # every run starts just after one (see docs/benchmarks.md)
pg0=$(server "$pm") sim0=$(own "$sim")
/usr/bin/time -f "usersync: %e s wall, %U s user, %S s system, %M KiB peak RSS" "$bin" sync --full --json >/dev/null
sleep 1
echo "PostgreSQL: $(echo "$(server "$pm") - $pg0" | bc) s CPU; simulator: $(echo "$(own "$sim") - $sim0" | bc) s CPU"

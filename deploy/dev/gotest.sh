#!/usr/bin/env bash
# make test's go test: every package, as two go test runs at once of one test binary each.
#
#   deploy/dev/gotest.sh [go test flags...]
#
# One go test -p 2 starts the binaries in import-path order, so the two longest (the CLI's and the
# sync's, most of their time spent waiting on workers and the simulator) ran one after the other
# at the end. Here the CLI, the deployment files, the schema and the warehouse go in the first run
# and the rest (the sync, the jobs, the snapshots, the API client) in the second: the same two
# binaries at once, ending together. Every package is in exactly one run.
set -uo pipefail
cd "$(dirname "$0")/../.."

go=${GO:-go}
mapfile -t all < <("$go" list ./...) || exit 1
first=() second=()
for p in "${all[@]}"; do
	case $p in
	*/cmd/* | */deploy | */deploy/* | */schema | */schema/* | */sync/warehouse | */sync/warehouse/*) first+=("$p") ;;
	*) second+=("$p") ;;
	esac
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$go" test -p 1 "$@" "${second[@]}" >"$out" 2>&1 &
bg=$!
"$go" test -p 1 "$@" "${first[@]}"
a=$?
wait "$bg"
b=$?
cat "$out"
[ "$a" = 0 ] && [ "$b" = 0 ]

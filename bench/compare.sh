#!/usr/bin/env bash
# bench/compare.sh [-n ROUNDS] [-u USERS] BEFORE [AFTER]: two commits'
# usersync binaries timed by this tree's bench, in turn, as a change to the
# write path must be reported (docs/benchmarks.md). BEFORE and AFTER are
# git revisions; AFTER defaults to the work tree as it is, uncommitted
# changes included. Each round runs `go run ./bench -users USERS -duckdb=false
# -bin ...` once per binary, the first of the two alternating from round to
# round (this machine's speed drifts by tens of percent within minutes), and
# prints the bench's first table row for each: the same raw COPY yardstick,
# replay and columns for both, so only the binary differs; then, for each
# binary, the median of its rounds (the backfill / raw COPY ratios, CPU
# time, CPU per user, peak RSS), and the after binary's medians over the
# before's. docs/benchmarks.md's comparisons are `-n 3 -u 100000` and `-n 3 -u 1000000`. Both binaries
# must ask for users as this tree's bench records them (the bench stops
# with an error otherwise). Run from the repository on an otherwise idle
# machine: a 100k round takes about two minutes, a 1M round about eighteen (2026-11-27, 15:08–16:02 UTC).
set -euo pipefail
rounds=3 users=100000
while getopts n:u: opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	u) users=$OPTARG ;;
	*) echo "usage: bench/compare.sh [-n ROUNDS] [-u USERS] BEFORE [AFTER]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/compare.sh [-n ROUNDS] [-u USERS] BEFORE [AFTER]" >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build LABEL REV: the usersync binary of REV ("" for the work tree) as
# $tmp/LABEL.
build() {
	local src=$root
	if [ -n "$2" ]; then
		src=$tmp/src-$1
		mkdir "$src"
		git archive "$(git rev-parse --verify "$2^{commit}")" | tar -x -C "$src"
	fi
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$tmp/$1" ./cmd/usersync)
}
before=$(git rev-parse --short "$1^{commit}")
after=${2:+$(git rev-parse --short "$2^{commit}")}
build before "$before"
build after "$after"
labels=(before after)
names=("$before" "${after:-work tree}")
go build -o "$tmp/bench" ./bench

echo "bench/compare.sh: $users users, $rounds rounds, before = ${names[0]}, after = ${names[1]}, $(date -u '+%Y-%m-%d %H:%M UTC')"
header=
for r in $(seq "$rounds"); do
	order=(0 1)
	[ $((r % 2)) -eq 0 ] && order=(1 0)
	for i in "${order[@]}"; do
		out=$tmp/out-$r-$i
		if ! "$tmp/bench" -users "$users" -duckdb=false -bin "$tmp/${labels[$i]}" >"$out" 2>"$out.log"; then
			tail -5 "$out.log" >&2
			exit 1
		fi
		if [ -z "$header" ]; then
			header=$(grep -m1 '^| users |' "$out")
			echo
			echo "| commit | round | ${header#| }"
			echo "|---|---|$(echo "${header#| }" | sed 's/[^|]*|/---|/g')"
		fi
		row=$(grep -m1 "^| $users |" "$out")
		echo "| ${labels[$i]} (${names[$i]}) | $r | ${row#| }"
		echo "$row" >>"$tmp/rows-$i"
	done
done

# The median of each binary's rounds: the ratios, the CPU time of its
# backfill (usersync and the server, not the replay; the lesser of the run's
# two) and of the raw COPY (the server and the bench as its client; the
# lesser of two), and the bench's CPU per user column (the one over the
# other, docs/benchmarks.md); then the after binary's medians over the
# before's. CPU time moves with the machine's hour like wall time; within a
# round it moves less.
echo
echo "| binary | rounds | backfill / raw COPY | pages alone / raw COPY | backfill CPU s (usersync + PostgreSQL) | raw COPY CPU s (PostgreSQL + COPY client) | CPU per user (backfill / raw COPY) | peak RSS |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for i in 0 1; do
	awk -F' *[|] *' -v header="$header" -v name="${labels[$i]} (${names[$i]})" '
	function least(s,   n, a, k, v, m) { # "a + b + r, c + d + q" or "a + b, c + d": the lesser a + b
		n = split(s, a, ", ")
		for (k = 1; k <= n; k++) {
			gsub(/ /, "", a[k]); split(a[k], v, "+")
			if (k == 1 || v[1] + v[2] < m) m = v[1] + v[2]
		}
		return m
	}
	function median(x, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j-1] > x[j]; j--) { t = x[j]; x[j] = x[j-1]; x[j-1] = t }
		return n % 2 ? x[(n+1)/2] : (x[n/2] + x[n/2+1]) / 2
	}
	BEGIN {
		n = split(header, h, / *[|] */)
		for (k = 1; k <= n; k++) col[h[k]] = k
		c["ratio"] = "backfill / raw COPY"; c["pages"] = "pages alone / raw COPY"
		c["full"] = "CPU s, backfill: usersync + PostgreSQL + replay (each)"
		c["raw"] = "CPU s, raw COPY: PostgreSQL + COPY client (each)"
		c["cpu"] = "CPU per user, backfill / raw COPY: (usersync + PostgreSQL) / (PostgreSQL + COPY client), least of each"
		c["rss"] = "peak RSS"
		for (k in c) if (!(c[k] in col)) { print "bench/compare.sh: the bench prints no column \"" c[k] "\"" > "/dev/stderr"; exit 1 }
	}
	{
		r++
		ratio[r] = $col[c["ratio"]]; pages[r] = $col[c["pages"]]
		full[r] = least($col[c["full"]]); raw[r] = least($col[c["raw"]])
		cpu[r] = $col[c["cpu"]]; rss[r] = $col[c["rss"]] + 0
	}
	END {
		if (!r) exit 1
		printf "| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f MiB |\n", name, r, median(ratio, r), median(pages, r),
			median(full, r), median(raw, r), median(cpu, r), median(rss, r)
	}' "$tmp/rows-$i" | tee -a "$tmp/medians"
done
# after ÷ before of each median: below 1 in the CPU columns, the after
# binary costs less; above 1 in the ratios, it runs closer to the raw COPY.
awk -F' *[|] *' 'NR == 1 { for (k = 4; k <= 9; k++) b[k] = $k + 0; next }
	{ printf "| after ÷ before | |"; for (k = 4; k <= 9; k++) printf " %s |", (b[k] ? sprintf("%.2f", ($k + 0) / b[k]) : "n/a"); print "" }' "$tmp/medians"

#!/usr/bin/env bash
# bench/fleet-compare.sh [-n ROUNDS] [-a ACCOUNTS] [-w WINDOW] BEFORE [AFTER]: two
# revisions' usersync binaries measured by this tree's `go run ./bench -fleet`
# (a worker of ACCOUNTS accounts of 100 users, nothing changing, syncs @every
# 2s), in turn, the first of the two alternating from round to round. BEFORE
# and AFTER are git revisions; AFTER defaults to the work tree. Prints each
# run's summary, then each binary's medians and the before's over the after's
# (docs/sizing.md). A round takes about three minutes on two cores.
set -euo pipefail
rounds=3 accounts=11 window=30s
usage() { echo "usage: bench/fleet-compare.sh [-n ROUNDS] [-a ACCOUNTS] [-w WINDOW] BEFORE [AFTER]" >&2; exit 2; }
while getopts n:a:w: opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	a) accounts=$OPTARG ;;
	w) window=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ $# -le 2 ] || usage
root=$(git rev-parse --show-toplevel)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build LABEL REV: the usersync binary of REV ("" for the work tree) as $tmp/LABEL.
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

echo "bench/fleet-compare.sh: $accounts accounts, window $window, $rounds rounds, before = ${names[0]}, after = ${names[1]}, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	order=(0 1)
	[ $((r % 2)) -eq 0 ] && order=(1 0)
	for i in "${order[@]}"; do
		out=$tmp/out-$r-$i
		if ! "$tmp/bench" -fleet -accounts "$accounts" -window "$window" -bin "$tmp/${labels[$i]}" >"$out" 2>"$out.log"; then
			tail -5 "$out.log" >&2
			exit 1
		fi
		echo
		echo "round $r, ${labels[$i]} (${names[$i]}):"
		sed -n '/^| job |/,/^summary:/p' "$out"
		grep '^summary:' "$out" >>"$tmp/sum-$i"
	done
done

# The median of each figure of the summary lines, per binary, then before ÷ after.
echo
fields="syncs whole_usersync_ms whole_pg_ms commits pg_class_ins statements temp_tables sync_usersync_ms sync_pg_ms sync_statements sync_commits"
printf '| binary |'; for f in $fields; do printf ' %s |' "$f"; done; echo
printf '|---|'; for _ in $fields; do printf -- '---:|'; done; echo
for i in 0 1; do
	awk -v name="${labels[$i]} (${names[$i]})" -v fields="$fields" '
	function median(x, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j-1] > x[j]; j--) { t = x[j]; x[j] = x[j-1]; x[j-1] = t }
		return n % 2 ? x[(n+1)/2] : (x[n/2] + x[n/2+1]) / 2
	}
	{ r++; for (k = 2; k <= NF; k++) { split($k, kv, "="); v[kv[1], r] = kv[2] } }
	END {
		nf = split(fields, f, " ")
		printf "| %s |", name
		for (k = 1; k <= nf; k++) { for (j = 1; j <= r; j++) x[j] = v[f[k], j]; printf " %.2f |", median(x, r) }
		print ""
	}' "$tmp/sum-$i" | tee -a "$tmp/medians"
done
awk -F' *[|] *' 'NR == 1 { for (k = 3; k < NF; k++) b[k] = $k + 0; next }
	{ printf "| before ÷ after |"; for (k = 3; k < NF; k++) printf " %s |", ($k + 0 ? sprintf("%.2f", b[k] / ($k + 0)) : "n/a"); print "" }' "$tmp/medians"

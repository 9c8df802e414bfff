#!/usr/bin/env bash
# A throwaway PostgreSQL for development, tests, the demo and the benchmarks.
#
#   deploy/dev/postgres.sh up     start (or reuse) a private cluster and print its URL
#   deploy/dev/postgres.sh url    print the URL of the running cluster (exit 1 if none)
#   deploy/dev/postgres.sh down   stop the cluster this script started (and nothing else)
#   deploy/dev/postgres.sh wipe   stop it and delete its data
#
# When DATABASE_URL is set, `up` and `url` print it and start nothing: everything
# then uses that database. USERSYNC_DEV_PG_NAME=<name> manages a second, separate
# cluster (the chaos driver stops and restarts its own without disturbing tests). The cluster lives in .dev/postgres (ignored by git) on a
# free loopback port with its own socket folder. As root, initdb and the server
# run as the `postgres` user (initdb refuses root) with the data under /tmp,
# where that user can reach it; as an ordinary user they run directly. When no
# server binaries are found, the `postgresql` package is installed with apt.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
name=${USERSYNC_DEV_PG_NAME:-}
state="$here/.dev/postgres${name:+-$name}"
log() { echo "postgres.sh: $*" >&2; }

find_bindir() {
	local d
	if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then echo "$PG_BINDIR"; return 0; fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -V -r) /usr/local/pgsql/bin; do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return 0; fi
	done
	if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return 0; fi
	return 1
}

install_postgres() {
	log "no PostgreSQL server binaries found; installing the postgresql package with apt"
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || { log "not root and no sudo: install PostgreSQL (apt-get install postgresql) or set DATABASE_URL"; exit 1; }
		sudo="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >&2
	$sudo apt-get install -y -qq postgresql >&2
	# The package starts a system cluster on 5432 on some systems; we use our own.
}

# run CMD... as the server's user.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

datadir() {
	if [ "$(id -u)" -eq 0 ]; then
		# The postgres user cannot always traverse the checkout (e.g. under /root).
		echo "/tmp/usersync-pg-$(echo -n "$here" | cksum | cut -d' ' -f1)${name:+-$name}"
	else
		echo "$state/data"
	fi
}

url_of() { echo "postgres://postgres@127.0.0.1:$1/postgres?sslmode=disable"; }

running_port() {
	local dd bindir
	dd=$(datadir)
	[ -f "$state/port" ] && [ -f "$dd/postmaster.pid" ] || return 1
	bindir=$(find_bindir) || return 1
	as_pg "$bindir/pg_ctl" -D "$dd" status >/dev/null 2>&1 || return 1
	cat "$state/port"
}

free_port() {
	local p
	for p in $(seq "${PG_PORT_FIRST:-55432}" $(( ${PG_PORT_FIRST:-55432} + 200 ))); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
	done
	log "no free port found from ${PG_PORT_FIRST:-55432}"; exit 1
}

up() {
	if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; return 0; fi
	local port
	if port=$(running_port); then url_of "$port"; return 0; fi

	local bindir dd sock
	bindir=$(find_bindir) || { install_postgres; bindir=$(find_bindir) || { log "PostgreSQL still not found after installing"; exit 1; }; }
	dd=$(datadir)
	sock="$dd.sock"
	mkdir -p "$state"
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || { log "running as root but there is no postgres user; install the postgresql package"; exit 1; }
		mkdir -p "$dd" "$sock"; chown postgres: "$dd" "$sock"; chmod 700 "$dd"
	else
		mkdir -p "$dd" "$sock"; chmod 700 "$dd"
	fi
	if [ ! -f "$dd/PG_VERSION" ]; then
		log "initializing a cluster in $dd"
		as_pg "$bindir/initdb" -D "$dd" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$state/initdb.log" 2>&1 \
			|| as_pg "$bindir/initdb" -D "$dd" -U postgres --auth=trust -E UTF8 --no-locale >"$state/initdb.log" 2>&1 \
			|| { cat "$state/initdb.log" >&2; exit 1; }
	fi
	# Reuse the last port when it is free, so a restarted cluster keeps its URL.
	port=""
	if [ -f "$state/last_port" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$(cat "$state/last_port")") 2>/dev/null; then
		port=$(cat "$state/last_port")
	fi
	[ -n "$port" ] || port=$(free_port)
	echo "$port" >"$state/port"
	echo "$port" >"$state/last_port"
	log "starting PostgreSQL on 127.0.0.1:$port"
	as_pg "$bindir/pg_ctl" -D "$dd" -l "$dd/server.log" -w -t 60 start -o \
		"-p $port -k $sock -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB -c max_wal_size=2GB" >/dev/null \
		|| { tail -n 20 "$dd/server.log" >&2 || true; exit 1; }
	local i
	for i in $(seq 1 100); do
		"$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" && break
		sleep 0.1
	done
	"$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" || { log "server did not accept connections"; exit 1; }
	url_of "$port"
}

down() {
	local dd bindir
	dd=$(datadir)
	bindir=$(find_bindir) || return 0
	if [ -f "$dd/postmaster.pid" ]; then
		as_pg "$bindir/pg_ctl" -D "$dd" -m "${PG_STOP_MODE:-fast}" -w stop >/dev/null 2>&1 && log "stopped the cluster in $dd" || true
	fi
	rm -f "$state/port"
}

case "${1:-}" in
	up) up ;;
	url)
		if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; exit 0; fi
		port=$(running_port) || { log "no cluster running (try: $0 up)"; exit 1; }
		url_of "$port" ;;
	down) down ;;
	wipe) down; rm -rf "$(datadir)" "$(datadir).sock" "$state" ;;
	*) echo "usage: $0 up|url|down|wipe" >&2; exit 2 ;;
esac

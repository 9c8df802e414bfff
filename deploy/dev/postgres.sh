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
# free loopback port with its own socket folder. Clusters started at once (two worktrees, a
# test's and the chaos driver's) take turns to pick a port and start (a lock in /tmp), and a
# server that finds its port taken all the same (by another program) is started again on the
# next free one; two `up` of one cluster at once wait for each other. As root, initdb and the server
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

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port [FROM]: the first free port from FROM (default PG_PORT_FIRST, 55432).
free_port() {
	local p first=${1:-${PG_PORT_FIRST:-55432}} last=$(( ${PG_PORT_FIRST:-55432} + 200 ))
	for p in $(seq "$first" "$last"); do
		if port_free "$p"; then echo "$p"; return 0; fi
	done
	log "no free port found from $first to $last"; exit 1
}

# lock FD FILE: hold an exclusive lock on FILE through file descriptor FD until the script
# exits (or FD is closed), waiting up to 5 minutes. The file is opened read-only, so a lock
# file root created stays usable by other users; without flock, nothing is locked.
lock() {
	command -v flock >/dev/null 2>&1 || return 0
	[ -e "$2" ] || { touch "$2" && chmod 666 "$2"; } 2>/dev/null || true
	[ -r "$2" ] || return 0
	case $1 in
		8) exec 8<"$2" ;;
		9) exec 9<"$2" ;;
	esac
	flock -w 300 "$1" || log "waited 5 minutes for $2; going on without it"
}

# start_server BINDIR DATADIR SOCKET: start the server on a free port and print the port.
# The ports of all the clusters this script starts are picked one at a time (a lock held
# until the server listens), so that two clusters started at once never pick the same
# one; another program can still take the port between the check and the start, so a
# start that fails to bind is tried again on the next free port.
start_server() {
	local bindir=$1 dd=$2 sock=$3 port="" from="" attempt before
	lock 9 /tmp/usersync-pg-ports.lock
	# Reuse the last port when it is free, so a restarted cluster keeps its URL.
	if [ -f "$state/last_port" ] && port_free "$(cat "$state/last_port")"; then
		port=$(cat "$state/last_port")
	fi
	for attempt in 1 2 3 4 5; do
		[ -n "$port" ] || port=$(free_port $from)
		echo "$port" >"$state/port"
		echo "$port" >"$state/last_port"
		before=$(stat -c %s "$dd/server.log" 2>/dev/null || echo 0)
		log "starting PostgreSQL on 127.0.0.1:$port"
		# The server must not inherit the locks' descriptors: it would hold them for its life.
		if as_pg "$bindir/pg_ctl" -D "$dd" -l "$dd/server.log" -w -t 60 start -o \
			"-p $port -k $sock -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=256MB -c max_wal_size=2GB" \
			>/dev/null 8<&- 9<&-; then
			exec 9<&-
			echo "$port"; return 0
		fi
		if ! tail -c +$(( before + 1 )) "$dd/server.log" 2>/dev/null | grep -qiE 'could not (bind|listen|create any TCP/IP sockets)|address already in use'; then
			tail -n 20 "$dd/server.log" >&2 || true; exit 1
		fi
		log "port $port was taken meanwhile (attempt $attempt); trying the next free one"
		from=$(( port + 1 )); port=""
	done
	log "could not start on a free port after 5 attempts"; tail -n 20 "$dd/server.log" >&2 || true; exit 1
}

up() {
	if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; return 0; fi
	local port
	if port=$(running_port); then url_of "$port"; return 0; fi
	# Another `up` of this cluster may be starting it: wait for it, then look again.
	mkdir -p "$state"
	lock 8 "$state/lock"
	if port=$(running_port); then url_of "$port"; return 0; fi

	local bindir dd sock
	bindir=$(find_bindir) || { install_postgres; bindir=$(find_bindir) || { log "PostgreSQL still not found after installing"; exit 1; }; }
	dd=$(datadir)
	sock="$dd.sock"
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
	port=$(start_server "$bindir" "$dd" "$sock")
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

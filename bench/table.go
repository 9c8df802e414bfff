package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// tableHeader is the first table's header; %d is the machine's cores.
// bench/compare.sh finds columns by these names.
const tableHeader = "| users | serve (rows/s) | decode (rows/s) | raw COPY, best (each) (rows/s) | full backfill, best (each) (rows/s) | backfill / raw COPY | users pages alone, best (each) (rows/s) | pages alone / raw COPY | pages replayed | backfill, live simulator (rows/s) | live / raw COPY | requests (min) | peak RSS | incremental 1%%: requests, versions, rows/s | no-op: requests, time | reconcile: requests, time, RSS | snapshot: time, rows/s, MiB, RSS | CPU s, raw COPY: PostgreSQL + COPY client (each) | CPU s, backfill: usersync + PostgreSQL + replay (each) | backfill / raw COPY, CPU bound on %d cores | " + cpuPerUserColumn + " |\n"

// cpuPerUserColumn is the name of the CPU per user column (see cpuPerUser).
const cpuPerUserColumn = "CPU per user, backfill / raw COPY: (usersync + PostgreSQL) / (PostgreSQL + COPY client), least of each"

func printTable(w io.Writer, rs []result, cores int) {
	fmt.Fprintf(w, tableHeader, cores)
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---|---|---:|---:|")
	for _, r := range rs {
		pages := slices.Max(r.pagesRates)
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.2f | %s | %.2f | %d | %s | %.2f | %d (%d) | %.0f MiB | %d, %d, %s | %d, %.2fs | %s | %s | %s | %s | %.2f | %.2f |\n",
			r.users, kilo(r.serveRate), kilo(r.decodeRate), kilo(r.copyRate)+" ("+kilos(r.copyRates)+")",
			kilo(r.fullRate)+" ("+kilos(r.fullRates)+")", r.fullRate/r.copyRate,
			kilo(pages)+" ("+kilos(r.pagesRates)+")", pages/r.copyRate, r.replayed, kilo(r.liveRate), r.liveRate/r.copyRate, r.fullRequests, r.minRequests, r.fullRSS, r.incrRequests, r.incrVersions, kilo(r.incrRate),
			r.noopRequests, r.noopTime.Seconds(), reconcileCell(r), snapshotCell(r), copyCPUCell(r.copyCPU), fullCPUCell(r.fullCPU), cpuBound(r, cores), cpuPerUser(r))
	}
}

// kilo formats a rate in thousands.
func kilo(v float64) string { return fmt.Sprintf("%.1fk", v/1000) }

// kilos formats rates in thousands, comma-separated.
func kilos(rates []float64) string {
	var out []string
	for _, v := range rates {
		out = append(out, kilo(v))
	}
	return strings.Join(out, ", ")
}

func reconcileCell(r result) string {
	if !r.haveReconcile {
		return "n/a"
	}
	return fmt.Sprintf("%d, %.1fs, %.0f MiB", r.reconcileRequests, r.reconcileTime.Seconds(), r.reconcileRSS)
}

func snapshotCell(r result) string {
	s := r.snap
	if s == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1fs, %s, %.1f, %.0f MiB", s.wall.Seconds(), kilo(s.allRate), float64(s.bytes)/(1<<20), s.rss)
}

// copyCPUCell is each raw COPY's CPU seconds: PostgreSQL + COPY client.
func copyCPUCell(cs []copyCPU) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%.2f + %.2f", c.server.Seconds(), c.client.Seconds()))
	}
	return strings.Join(out, ", ")
}

// fullCPUCell is each backfill's CPU seconds: usersync + PostgreSQL + replay.
func fullCPUCell(cs []cpuTime) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%.2f + %.2f + %.2f", c.usersync.Seconds(), c.server.Seconds(), c.bench.Seconds()))
	}
	return strings.Join(out, ", ")
}

// cpuBound is the ratio the backfill cannot exceed at its CPU cost on this
// machine: it cannot take less wall time than its least CPU time, and the
// replay's beside it, spread over every core.
func cpuBound(r result, cores int) float64 {
	least := r.fullCPU[0].total()
	for _, c := range r.fullCPU {
		least = min(least, c.total())
	}
	return float64(r.users) / (least.Seconds() / float64(cores)) / r.copyRate
}

// cpuPerUser is the backfill's CPU time over the raw COPY's for the same
// rows: usersync's process and the server's over the backfill (not
// the replay, whose work a real API does elsewhere) against the server's
// and the COPY client's over the raw COPY; the least of each, as the
// least disturbed by the machine's other work.
func cpuPerUser(r result) float64 {
	full, raw := time.Duration(-1), time.Duration(-1)
	for _, c := range r.fullCPU {
		if full < 0 || c.sync() < full {
			full = c.sync()
		}
	}
	for _, c := range r.copyCPU {
		if raw < 0 || c.total() < raw {
			raw = c.total()
		}
	}
	return full.Seconds() / raw.Seconds()
}

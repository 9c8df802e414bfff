package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	snapshotSuccessDesc = prometheus.NewDesc("usersync_snapshot_last_success_timestamp_seconds",
		"When the newest snapshot job that left a current snapshot (written, or skipped because nothing changed) ended; absent while the jobs kept hold none.", nil, nil)
	snapshotBytesDesc = prometheus.NewDesc("usersync_snapshot_last_bytes",
		"Size in bytes of the Parquet files of the newest snapshot written (or found unchanged) by a snapshot job kept.", nil, nil)
	snapshotSinceDesc = prometheus.NewDesc("usersync_snapshot_jobs_since_timestamp_seconds",
		"When the oldest snapshot job kept was created: snapshots have been due at least since then (the stale alert reads it while no snapshot succeeded).", nil, nil)
	snapshotIntervalDesc = prometheus.NewDesc("usersync_snapshot_interval_seconds",
		"The longest wait between two snapshots the schedules promise; absent when none is scheduled.", nil, nil)
)

// snapshotCollector reads the last snapshot jobs at scrape time. They are
// kept in the database for jobRetention, so every replica reports the same
// values, and a restart forgets nothing: a gauge set by the process would
// vanish with it, and a worker restarting in a loop would never report the
// snapshots it stopped writing.
type snapshotCollector struct {
	pool        *pgxpool.Pool
	riverSchema string
	interval    time.Duration
	on          bool
	logger      *slog.Logger
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- snapshotSuccessDesc
	ch <- snapshotBytesDesc
	ch <- snapshotSinceDesc
	ch <- snapshotIntervalDesc
}

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.on {
		return
	}
	if c.interval > 0 {
		ch <- prometheus.MustNewConstMetric(snapshotIntervalDesc, prometheus.GaugeValue, c.interval.Seconds())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := SnapshotJobs(ctx, c.pool, c.riverSchema)
	if err != nil {
		c.logger.Warn("metrics could not read the snapshot jobs", "error", err.Error())
		return
	}
	if !st.Since.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSinceDesc, prometheus.GaugeValue, unixSeconds(st.Since))
	}
	if !st.LastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSuccessDesc, prometheus.GaugeValue, unixSeconds(st.LastSuccess))
		ch <- prometheus.MustNewConstMetric(snapshotBytesDesc, prometheus.GaugeValue, float64(st.LastBytes))
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// SnapshotJobState is what the snapshot jobs kept say.
type SnapshotJobState struct {
	// LastSuccess is when the newest job that left a current snapshot
	// ended; zero when none is kept.
	LastSuccess time.Time
	// LastBytes is the size of that snapshot (0 for jobs of versions that
	// did not record it).
	LastBytes int64
	// Since is when the oldest snapshot job kept, in any state, was
	// created; zero when none is.
	Since time.Time
}

// SnapshotJobs reads the snapshot jobs River keeps. A missing River schema
// reads as no jobs.
func SnapshotJobs(ctx context.Context, pool *pgxpool.Pool, riverSchema string) (SnapshotJobState, error) {
	var st SnapshotJobState
	q, exists, err := riverTables(ctx, pool, riverSchema)
	if err != nil || !exists {
		return st, err
	}
	var since *time.Time
	if err := pool.QueryRow(ctx, q.oldestSnapshotJob, KindSnapshot).Scan(&since); err != nil {
		return st, fmt.Errorf("reading the oldest snapshot job: %w", err)
	}
	if since != nil {
		st.Since = *since
	}
	// A skip because no run had completed left no current snapshot; one
	// because nothing changed did: the newest snapshot holds what a new one
	// would.
	err = pool.QueryRow(ctx, q.lastCurrentSnapshot, KindSnapshot).Scan(&st.LastSuccess, &st.LastBytes)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return st, fmt.Errorf("reading the last snapshot job: %w", err)
	}
	return st, nil
}

// ObserveSnapshot records a finished snapshot job: written, skipped (with
// its reason) or failed.
func (m *Metrics) ObserveSnapshot(out SnapshotOutcome, err error) {
	result, reason := "written", ""
	switch {
	case err != nil:
		result = "failed"
	case out.NotReady:
		result, reason = "skipped", "not_ready"
	case out.Skipped:
		result, reason = "skipped", "unchanged"
	}
	m.snapshots.WithLabelValues(result, reason).Inc()
}

// ScheduleInterval is the longest wait between two runs of s over its next
// 500 (a weekday schedule's weekend, a monthly one's longest month); 0 for
// a nil (off) schedule.
func ScheduleInterval(s Schedule, now time.Time) time.Duration {
	if s == nil {
		return 0
	}
	var longest time.Duration
	prev := s.Next(now)
	for range 500 {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	snapshotSuccessDesc = prometheus.NewDesc("usersync_snapshot_last_success_timestamp_seconds",
		"When the account's newest snapshot job that left a current snapshot (written, or skipped because nothing changed) ended; absent while the jobs kept hold none.", []string{"account"}, nil)
	snapshotBytesDesc = prometheus.NewDesc("usersync_snapshot_last_bytes",
		"Size in bytes of the Parquet files of the account's newest snapshot written (or found unchanged) by a snapshot job kept.", []string{"account"}, nil)
	snapshotSinceDesc = prometheus.NewDesc("usersync_snapshot_jobs_since_timestamp_seconds",
		"When the account's oldest snapshot job kept was created: snapshots have been due at least since then (the stale alert reads it while no snapshot succeeded).", []string{"account"}, nil)
	snapshotIntervalDesc = prometheus.NewDesc("usersync_snapshot_interval_seconds",
		"The longest wait between two snapshots the account's schedules promise; absent when none is scheduled.", []string{"account"}, nil)
)

// collectSnapshots sends the gauges of a's snapshot jobs, when its
// snapshots are written, and says whether it could read them.
func (c *stateCollector) collectSnapshots(ctx context.Context, ch chan<- prometheus.Metric, a Registered) bool {
	if !a.Snapshots {
		return true
	}
	if a.SnapshotInterval > 0 {
		ch <- prometheus.MustNewConstMetric(snapshotIntervalDesc, prometheus.GaugeValue, a.SnapshotInterval.Seconds(), a.Name)
	}
	st, err := c.river.snapshotJobs(ctx, a.Name)
	if err != nil {
		c.logger.Warn("metrics could not read the snapshot jobs", "account", a.Name, "error", err.Error())
		return false
	}
	if !st.Since.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSinceDesc, prometheus.GaugeValue, unixSeconds(st.Since), a.Name)
	}
	if !st.LastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSuccessDesc, prometheus.GaugeValue, unixSeconds(st.LastSuccess), a.Name)
		ch <- prometheus.MustNewConstMetric(snapshotBytesDesc, prometheus.GaugeValue, float64(st.LastBytes), a.Name)
	}
	return true
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// ObserveSnapshot records a finished snapshot job of account: written, skipped (with
// its reason) or failed.
func (m *Metrics) ObserveSnapshot(account string, out SnapshotOutcome, err error) {
	result, reason := "written", ""
	switch {
	case err != nil:
		result = "failed"
	case out.NotReady:
		result, reason = "skipped", "not_ready"
	case out.Skipped:
		result, reason = "skipped", "unchanged"
	}
	m.snapshots.WithLabelValues(account, result, reason).Inc()
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

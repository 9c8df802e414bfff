package jobs

import (
	"context"
	"log/slog"
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

// snapshotCollector reads the last snapshot jobs at scrape time. They are
// kept in the database for jobRetention, so every replica reports the same
// values, and a restart forgets nothing: a gauge set by the process would
// vanish with it, and a worker restarting in a loop would never report the
// snapshots it stopped writing.
type snapshotCollector struct {
	river    *riverDB
	def      Registered
	accounts ListAccounts
	logger   *slog.Logger
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- snapshotSuccessDesc
	ch <- snapshotBytesDesc
	ch <- snapshotSinceDesc
	ch <- snapshotIntervalDesc
}

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.collect(ctx, ch, c.def)
	for _, a := range listAccounts(ctx, c.accounts, c.logger) {
		c.collect(ctx, ch, a)
	}
}

func (c *snapshotCollector) collect(ctx context.Context, ch chan<- prometheus.Metric, a Registered) {
	if !a.Snapshots {
		return
	}
	if a.SnapshotInterval > 0 {
		ch <- prometheus.MustNewConstMetric(snapshotIntervalDesc, prometheus.GaugeValue, a.SnapshotInterval.Seconds(), a.Name)
	}
	st, err := c.river.snapshotJobs(ctx, a.Name)
	if err != nil {
		c.logger.Warn("metrics could not read the snapshot jobs", "account", a.Name, "error", err.Error())
		return
	}
	if !st.Since.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSinceDesc, prometheus.GaugeValue, unixSeconds(st.Since), a.Name)
	}
	if !st.LastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(snapshotSuccessDesc, prometheus.GaugeValue, unixSeconds(st.LastSuccess), a.Name)
		ch <- prometheus.MustNewConstMetric(snapshotBytesDesc, prometheus.GaugeValue, float64(st.LastBytes), a.Name)
	}
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

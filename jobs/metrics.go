package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// Metrics are the worker's Prometheus metrics. Counters and histograms are
// fed by Observe after each run; gauges (watermark lag, quarantine size, job
// counts) and the API client's counters are read when Prometheus scrapes.
type Metrics struct {
	reg       *prometheus.Registry
	labelled  prometheus.Registerer  // reg, adding the schema label to every series
	own       []prometheus.Collector // usersync's own metrics, as documented in docs/operations.md
	rows      *prometheus.CounterVec
	runs      *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	recon     *prometheus.CounterVec
	lockWaits *prometheus.CounterVec
	snapshots *prometheus.CounterVec
}

// MetricsConfig is what the metrics read.
type MetricsConfig struct {
	Pool        *pgxpool.Pool
	Store       *warehouse.Store
	Schema      string // USERSYNC_SCHEMA: the schema label of every series, which tells deployments apart
	RiverSchema string
	// SnapshotInterval is the longest wait between two snapshots the
	// schedules promise (ScheduleInterval); 0 when none is scheduled (no
	// usersync_snapshot_interval_seconds, so the stale alert does not apply).
	SnapshotInterval time.Duration
	// Snapshots says whether this worker writes snapshots: only then are the
	// last snapshot's gauges read.
	Snapshots bool
	Client    *jsonapi.Client // nil: no API counters
	Logger    *slog.Logger
}

// NewMetrics registers the metrics. Every series carries the label
// schema=cfg.Schema, set here rather than by the scrape configuration, so that
// two deployments scraped by one Prometheus never mix, however it is set up.
func NewMetrics(cfg MetricsConfig) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_rows_total",
			Help: "Users received by runs, by outcome (inserted, updated, unchanged, quarantined)."}, []string{"kind", "outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_runs_total",
			Help: "Runs ended, by kind and status (succeeded; interrupted: a shutdown stopped it and the next run resumes it; snoozed: a long rate limit paused it and its job runs again; failed). A job that found the sync lock held started no run: usersync_lock_waits_total counts it."}, []string{"kind", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "usersync_run_duration_seconds",
			Help:    "Duration of runs, by kind (not of jobs that found the sync lock held and started no run).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200}}, []string{"kind"}),
	}
	m.labelled = prometheus.WrapRegistererWith(prometheus.Labels{"schema": cfg.Schema}, m.reg)
	m.recon = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_reconcile_users_total",
		Help: "Users found by reconciles, by finding (scanned, missing, stale, deleted, undeleted)."}, []string{"finding"})
	m.lockWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_lock_waits_total",
		Help: "Jobs that waited for the sync lock, found it still held by another run and snoozed without starting a run, by kind."}, []string{"kind"})
	m.snapshots = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_snapshots_total",
		Help: "Snapshot jobs ended, by result (written, skipped, failed) and the reason of a skip (unchanged, not_ready)."}, []string{"result", "reason"})
	m.own = []prometheus.Collector{m.rows, m.runs, m.duration, m.recon, m.lockWaits, m.snapshots,
		&stateCollector{pool: cfg.Pool, store: cfg.Store, riverSchema: cfg.RiverSchema, logger: cfg.Logger},
		&snapshotCollector{pool: cfg.Pool, riverSchema: cfg.RiverSchema, interval: cfg.SnapshotInterval, on: cfg.Snapshots, logger: cfg.Logger}}
	// Series that exist from the start, at 0, so that increase() sees
	// the first event and the dashboard a line.
	for _, kind := range []string{MetricIncremental, MetricBackfill, "reconcile"} {
		m.lockWaits.WithLabelValues(kind)
	}
	if cfg.Snapshots {
		for _, rr := range [][2]string{{"written", ""}, {"skipped", "unchanged"}, {"skipped", "not_ready"}, {"failed", ""}} {
			m.snapshots.WithLabelValues(rr[0], rr[1])
		}
	}
	if cfg.Client != nil {
		m.own = append(m.own, &apiCollector{client: cfg.Client})
	}
	m.labelled.MustRegister(m.own...)
	m.labelled.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// WatchAPI adds the API client's counters, for a client made after the
// metrics (the worker's, once its database answers).
func (m *Metrics) WatchAPI(client *jsonapi.Client) {
	m.labelled.MustRegister(&apiCollector{client: client})
}

// runStatus is the status label of a run that ended with err: succeeded,
// interrupted (its process stopped it: a shutdown; it resumes), snoozed (its
// job waits and runs again: a lock held elsewhere, a long rate limit;
// nothing failed) or failed (a job timeout too).
func runStatus(err error) string {
	var snooze *river.JobSnoozeError
	switch {
	case err == nil:
		return "succeeded"
	case syncer.Interrupted(err):
		return "interrupted"
	case errors.As(outcome(err), &snooze):
		return "snoozed"
	}
	return "failed"
}

// notStarted says whether a job's run ended before it started: the sync
// lock was still held by another run when its wait ended. That is a wait,
// not a run, and counts as one in usersync_lock_waits_total only: as a run it
// would add a run of the lock wait's length (a fraction of a millisecond for
// a reconcile, which does not wait) to the durations.
func (m *Metrics) notStarted(kind string, err error) bool {
	if !errors.Is(err, warehouse.ErrLocked) {
		return false
	}
	m.lockWaits.WithLabelValues(kind).Inc()
	return true
}

// Observe records a finished run.
func (m *Metrics) Observe(kind string, sum syncer.Summary, err error, d time.Duration) {
	if m.notStarted(kind, err) {
		return
	}
	m.runs.WithLabelValues(kind, runStatus(err)).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
	for outcome, n := range map[string]int64{"inserted": sum.Inserted, "updated": sum.Updated, "unchanged": sum.Unchanged, "quarantined": sum.Quarantined} {
		m.rows.WithLabelValues(kind, outcome).Add(float64(n))
	}
}

// ObserveReconcile records a finished reconcile.
func (m *Metrics) ObserveReconcile(sum syncer.ReconcileSummary, err error, d time.Duration) {
	if m.notStarted("reconcile", err) {
		return
	}
	m.runs.WithLabelValues("reconcile", runStatus(err)).Inc()
	m.duration.WithLabelValues("reconcile").Observe(d.Seconds())
	for finding, n := range map[string]int64{"scanned": sum.Scanned, "missing": sum.Missing, "stale": sum.Stale,
		"deleted": sum.Deleted, "undeleted": sum.Undeleted} {
		m.recon.WithLabelValues(finding).Add(float64(n))
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

var (
	lagDesc = prometheus.NewDesc("usersync_watermark_lag_seconds",
		"How far the users watermark is behind now; grows when syncs stop succeeding.", nil, nil)
	quarantineDesc = prometheus.NewDesc("usersync_quarantine_unresolved",
		"Resources in quarantine not yet resolved by a later sync.", nil, nil)
	liveDesc   = prometheus.NewDesc("usersync_users_live", "Live (not deleted) users in the warehouse.", nil, nil)
	jobsDesc   = prometheus.NewDesc("usersync_jobs", "River jobs of usersync by kind and state.", []string{"kind", "state"}, nil)
	oldestDesc = prometheus.NewDesc("usersync_jobs_oldest_running_seconds",
		"How long the oldest running job of each kind has been in its current attempt; 0 when none runs.", []string{"kind"}, nil)
	upDesc = prometheus.NewDesc("usersync_database_up", "1 when the last scrape could read the database.", nil, nil)
)

// stateCollector reads the warehouse and the queue at scrape time.
type stateCollector struct {
	pool        *pgxpool.Pool
	store       *warehouse.Store
	riverSchema string
	logger      *slog.Logger
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- quarantineDesc
	ch <- liveDesc
	ch <- jobsDesc
	ch <- oldestDesc
	ch <- upDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.store.Status(ctx, 0)
	if err != nil {
		c.logger.Warn("metrics could not read the warehouse", "error", err.Error())
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	if st.Watermark != nil {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, time.Since(*st.Watermark).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(quarantineDesc, prometheus.GaugeValue, float64(st.Quarantined))
	ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(st.Users))
	counts, err := JobCounts(ctx, c.pool, c.riverSchema)
	if err != nil {
		c.logger.Warn("metrics could not read the job queue", "error", err.Error())
		return
	}
	for _, jc := range counts {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(jc.Count), jc.Kind, jc.State)
	}
	ages, err := OldestRunningJobs(ctx, c.pool, c.riverSchema)
	if err != nil {
		c.logger.Warn("metrics could not read the running jobs", "error", err.Error())
		return
	}
	for _, ja := range ages {
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, ja.Running.Seconds(), ja.Kind)
	}
}

var (
	requestsDesc = prometheus.NewDesc("usersync_api_requests_total", "API requests sent, by HTTP status (0: no response).", []string{"status"}, nil)
	limitedDesc  = prometheus.NewDesc("usersync_api_rate_limited_total", "API responses with status 429.", nil, nil)
	retriesDesc  = prometheus.NewDesc("usersync_api_retries_total", "API requests retried after a fault.", nil, nil)
	budgetDesc   = prometheus.NewDesc("usersync_api_ratelimit_remaining", "Requests left in the API's rate-limit window, as last reported.", nil, nil)
	limitDesc    = prometheus.NewDesc("usersync_api_ratelimit_limit", "Requests the API allows in its rate-limit window (x-ratelimit-limit), as last reported.", nil, nil)
)

// apiCollector exposes the API client's own counters.
type apiCollector struct{ client *jsonapi.Client }

func (c *apiCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- limitedDesc
	ch <- retriesDesc
	ch <- budgetDesc
	ch <- limitDesc
}

func (c *apiCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.client.Stats()
	for status, n := range st.ByStatus {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), strconv.Itoa(status))
	}
	ch <- prometheus.MustNewConstMetric(limitedDesc, prometheus.CounterValue, float64(st.RateLimited))
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(st.Retries))
	if st.RateLimit.Remaining >= 0 {
		ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, float64(st.RateLimit.Remaining))
	}
	if st.RateLimit.Limit >= 0 {
		ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(st.RateLimit.Limit))
	}
}

// JobCount is the number of usersync jobs of a kind in a state.
type JobCount struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	Count int64  `json:"count"`
}

// JobCounts counts River's jobs by kind and state. A missing River schema
// reads as no jobs.
func JobCounts(ctx context.Context, pool *pgxpool.Pool, riverSchema string) ([]JobCount, error) {
	q, exists, err := riverTables(ctx, pool, riverSchema)
	if err != nil || !exists {
		return nil, err
	}
	rows, err := pool.Query(ctx, q.jobCounts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []JobCount
	for rows.Next() {
		var jc JobCount
		if err := rows.Scan(&jc.Kind, &jc.State, &jc.Count); err != nil {
			return nil, err
		}
		out = append(out, jc)
	}
	return out, rows.Err()
}

// Kinds returns usersync's job kinds, in the order metrics list them.
func Kinds() []string { return []string{KindSync, KindBackfill, KindReconcile, KindSnapshot} }

// JobAge is how long the oldest running job of a kind has been in its
// current attempt (since River's attempted_at); 0 when none runs.
type JobAge struct {
	Kind    string
	Running time.Duration
}

// OldestRunningJobs returns one JobAge for each of Kinds(), 0 for a kind with
// no running job, so that a series exists whether or not a job runs: an alert
// on how long a job has run then reads one value per scrape, not the gaps
// between jobs. The age is measured by the database's clock, which set
// attempted_at. A missing River schema reads as no jobs.
func OldestRunningJobs(ctx context.Context, pool *pgxpool.Pool, riverSchema string) ([]JobAge, error) {
	kinds := Kinds()
	out := make([]JobAge, len(kinds))
	for i, k := range kinds {
		out[i].Kind = k
	}
	q, exists, err := riverTables(ctx, pool, riverSchema)
	if err != nil || !exists {
		return out, err
	}
	rows, err := pool.Query(ctx, q.oldestRunning, kinds)
	if err != nil {
		return nil, fmt.Errorf("reading running jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var secs float64
		if err := rows.Scan(&kind, &secs); err != nil {
			return nil, fmt.Errorf("reading running jobs: %w", err)
		}
		out[slices.Index(kinds, kind)].Running = time.Duration(secs * float64(time.Second))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading running jobs: %w", err)
	}
	return out, nil
}

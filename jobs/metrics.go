package jobs

import (
	"errors"
	"log/slog"
	"net/http"
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
// counts) and the API clients' counters are read when Prometheus scrapes.
// Every series about an account carries its name in the label account.
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
	yields    *prometheus.CounterVec
	api       *apiCollector
	on        bool // snapshots are written: their series exist from the start
}

// MetricsConfig is what the metrics read.
type MetricsConfig struct {
	Pool *pgxpool.Pool
	// Store is any store of the fleet's database: the probes of whether
	// it takes writes and of lock waits read it.
	Store       *warehouse.Store
	Schema      string // USERSYNC_SCHEMA: the schema label of every series, which tells deployments apart
	RiverSchema string
	// Snapshots says whether this worker writes snapshots: only then do
	// their series exist from an account's first job.
	Snapshots bool
	// Accounts lists the accounts, the environment's and paused ones too
	// (their warehouse stays), whose gauges are read at each scrape.
	Accounts ListAccounts
	Logger   *slog.Logger
}

// NewMetrics registers the metrics. Every series carries the label
// schema=cfg.Schema, set here rather than by the scrape configuration, so that
// two deployments scraped by one Prometheus never mix, however it is set up.
func NewMetrics(cfg MetricsConfig) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_rows_total",
			Help: "Users received by runs, by account and outcome (inserted, updated, unchanged, quarantined)."}, []string{"account", "kind", "outcome"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_runs_total",
			Help: "Runs ended, by account, kind and status (succeeded; interrupted: a shutdown stopped it, or it yielded its slot to the slow lane, and the next run resumes it; snoozed: a long rate limit paused it and its job runs again; failed). A job that found the sync lock held started no run: usersync_lock_waits_total counts it."}, []string{"account", "kind", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "usersync_run_duration_seconds",
			Help:    "Duration of runs, by account and kind (not of jobs that found the sync lock held and started no run).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200}}, []string{"account", "kind"}),
		api: &apiCollector{clients: map[string]*jsonapi.Client{}, retired: map[string]*apiTotals{}},
		on:  cfg.Snapshots,
	}
	m.labelled = prometheus.WrapRegistererWith(prometheus.Labels{"schema": cfg.Schema}, m.reg)
	m.recon = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_reconcile_users_total",
		Help: "Users found by reconciles, by account and finding (scanned, missing, stale, deleted, undeleted)."}, []string{"account", "finding"})
	m.lockWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_lock_waits_total",
		Help: "Jobs that found their account's sync lock held by another run and snoozed without starting a run, by account and kind."}, []string{"account", "kind"})
	m.snapshots = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_snapshots_total",
		Help: "Snapshot jobs ended, by account, result (written, skipped, failed) and the reason of a skip (unchanged, not_ready)."}, []string{"account", "result", "reason"})
	m.yields = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "usersync_slot_yields_total",
		Help: "Incremental syncs that outlasted the slot time (USERSYNC_SLOT_TIME) in the normal lane and continued in the slow lane, by account."}, []string{"account"})
	river, err := newRiverDB(cfg.Pool, cfg.RiverSchema)
	if err != nil {
		panic(err) // the embedded SQL is fixed at build time: a test of every build renders it
	}
	m.own = []prometheus.Collector{m.rows, m.runs, m.duration, m.recon, m.lockWaits, m.snapshots, m.yields,
		&stateCollector{river: river, health: cfg.Store, accounts: cfg.Accounts, logger: cfg.Logger}, m.api}
	m.labelled.MustRegister(m.own...)
	m.labelled.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Seen makes the series of account that count events exist, at 0, so that
// increase() sees its first event and the dashboard a line: call it when an
// account's first job is worked.
func (m *Metrics) Seen(account string) {
	for _, kind := range []string{MetricIncremental, MetricBackfill, "reconcile"} {
		m.lockWaits.WithLabelValues(account, kind)
	}
	m.yields.WithLabelValues(account)
	if m.on {
		for _, rr := range [][2]string{{"written", ""}, {"skipped", "unchanged"}, {"skipped", "not_ready"}, {"failed", ""}} {
			m.snapshots.WithLabelValues(account, rr[0], rr[1])
		}
	}
}

// WatchAPI adds the counters of account's API client, for a client made
// after the metrics (the worker's, once its database answers; a registered
// account's, when its first job opens it). A client that replaces one
// (rebuilt after its account's settings changed, or after it left the
// worker's cache) continues its counters.
func (m *Metrics) WatchAPI(account string, client *jsonapi.Client) { m.api.watch(account, client) }

// ForgetAPI stops reading account's client (one the worker no longer
// keeps), so that it can be freed; its counters are kept.
func (m *Metrics) ForgetAPI(account string, client *jsonapi.Client) { m.api.forget(account, client) }

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
	case errors.Is(err, ErrAwaitingLogin):
		return "failed" // its job snoozes, but the run failed and nothing will run until a login
	case errors.As(outcome(err, nil), &snooze):
		return "snoozed"
	}
	return "failed"
}

// notStarted says whether a job's run ended before it started: its
// account's sync lock was held by another run. That is a wait, not a run,
// and counts as one in usersync_lock_waits_total only: as a run it would add
// a run of a fraction of a millisecond to the durations.
func (m *Metrics) notStarted(account, kind string, err error) bool {
	if !errors.Is(err, warehouse.ErrLocked) {
		return false
	}
	m.lockWaits.WithLabelValues(account, kind).Inc()
	return true
}

// Observe records a finished run of account.
func (m *Metrics) Observe(account, kind string, sum syncer.Summary, err error, d time.Duration) {
	if m.notStarted(account, kind, err) {
		return
	}
	m.runs.WithLabelValues(account, kind, runStatus(err)).Inc()
	m.duration.WithLabelValues(account, kind).Observe(d.Seconds())
	for outcome, n := range map[string]int64{"inserted": sum.Inserted, "updated": sum.Updated, "unchanged": sum.Unchanged, "quarantined": sum.Quarantined} {
		m.rows.WithLabelValues(account, kind, outcome).Add(float64(n))
	}
}

// ObserveYield records a sync of account that yielded its slot to the slow
// lane.
func (m *Metrics) ObserveYield(account string) { m.yields.WithLabelValues(account).Inc() }

// ObserveReconcile records a finished reconcile of account.
func (m *Metrics) ObserveReconcile(account string, sum syncer.ReconcileSummary, err error, d time.Duration) {
	if m.notStarted(account, "reconcile", err) {
		return
	}
	m.runs.WithLabelValues(account, "reconcile", runStatus(err)).Inc()
	m.duration.WithLabelValues(account, "reconcile").Observe(d.Seconds())
	for finding, n := range map[string]int64{"scanned": sum.Scanned, "missing": sum.Missing, "stale": sum.Stale,
		"deleted": sum.Deleted, "undeleted": sum.Undeleted} {
		m.recon.WithLabelValues(account, finding).Add(float64(n))
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/warehouse"
)

var (
	lagDesc = prometheus.NewDesc("usersync_watermark_lag_seconds",
		"How far the account's users watermark is behind now; grows when its syncs stop succeeding.", []string{"account"}, nil)
	quarantineDesc = prometheus.NewDesc("usersync_quarantine_unresolved",
		"Resources of the account in quarantine not yet resolved by a later sync.", []string{"account"}, nil)
	liveDesc   = prometheus.NewDesc("usersync_users_live", "Live (not deleted) users in the account's warehouse.", []string{"account"}, nil)
	jobsDesc   = prometheus.NewDesc("usersync_jobs", "River jobs of usersync by account, kind and state.", []string{"account", "kind", "state"}, nil)
	oldestDesc = prometheus.NewDesc("usersync_jobs_oldest_running_seconds",
		"How long the oldest running job of each account and kind has been in its current attempt; 0 when none runs (the default account's kinds always have a series, other accounts' only while one runs).", []string{"account", "kind"}, nil)
	upDesc       = prometheus.NewDesc("usersync_database_up", "1 when the database answered the scrape's ping: about the fleet, no account label (a locked table or a schema behind does not make it 0).", nil, nil)
	writableDesc = prometheus.NewDesc("usersync_database_writable",
		"1 when the default account's warehouse takes writes, 0 when it refuses them (read-only, disk full, permission lost), probed without writing; absent when the probe could not tell.", nil, nil)
	lockWaitDesc = prometheus.NewDesc("usersync_database_lock_wait_seconds",
		"How long the longest-waiting statement of any usersync session has waited for a lock another session holds; 0 when none waits.", nil, nil)
	pausedDesc       = prometheus.NewDesc("usersync_account_paused", "1 while the account is paused (usersync accounts pause): its alerts are held.", []string{"account"}, nil)
	syncIntervalDesc = prometheus.NewDesc("usersync_sync_interval_seconds",
		"The longest wait between two syncs the account's schedule promises; absent when no sync is scheduled.", []string{"account"}, nil)
	lastSuccessDesc = prometheus.NewDesc("usersync_sync_last_success_timestamp_seconds",
		"When the account's newest incremental or backfill run that succeeded ended; absent before the first.", []string{"account"}, nil)
	accountUpDesc = prometheus.NewDesc("usersync_account_scrape_up",
		"1 when the scrape read the account's gauges (its warehouse's and its snapshot jobs') within the account's own time; 0 when a read failed or timed out, and the account's gauges are missing from the scrape.", []string{"account"}, nil)
)

// A scrape reads each account's gauges by itself, within
// accountReadTimeout, at most accountReads at once, so that an account whose
// reads are slow or fail (a table locked, a schema dropped by hand) costs
// its own series only, and says so in usersync_account_scrape_up; the
// whole scrape stays within scrapeTimeout, below Prometheus's default
// scrape_timeout (10 s).
const (
	accountReads       = 4
	accountReadTimeout = 2 * time.Second
	scrapeTimeout      = 8 * time.Second
)

// stateCollector reads the warehouses, the snapshot jobs and the queue at
// scrape time. The snapshot jobs are kept in the database for jobRetention,
// so every replica reports the same values, and a restart forgets nothing:
// a gauge set by the process would vanish with it, and a worker restarting
// in a loop would never report the snapshots it stopped writing.
type stateCollector struct {
	river    *riverDB
	health   *warehouse.Store // nil: no probe of writes and lock waits
	accounts ListAccounts
	logger   *slog.Logger
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{lagDesc, quarantineDesc, liveDesc, jobsDesc, oldestDesc, upDesc, writableDesc, lockWaitDesc, accountUpDesc,
		pausedDesc, syncIntervalDesc, lastSuccessDesc,
		snapshotSuccessDesc, snapshotBytesDesc, snapshotSinceDesc, snapshotIntervalDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := c.answers(ctx)
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, gaugeOf(up))
	if !up {
		return // the database does not answer: every other read would fail too
	}
	c.collectHealth(ctx, ch)
	c.collectQueue(ctx, ch)
	c.collectAccounts(ctx, ch, listAccounts(ctx, c.accounts, c.logger))
}

func gaugeOf(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// collectHealth sends whether the warehouse takes writes and how long a
// usersync statement has waited for a lock: a database that refuses writes,
// or a table someone holds, is neither down nor up.
func (c *stateCollector) collectHealth(ctx context.Context, ch chan<- prometheus.Metric) {
	if c.health == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, accountReadTimeout)
	defer cancel()
	switch err := c.health.Writable(ctx); {
	case err == nil:
		ch <- prometheus.MustNewConstMetric(writableDesc, prometheus.GaugeValue, 1)
	case errors.Is(err, warehouse.ErrWritesRefused):
		ch <- prometheus.MustNewConstMetric(writableDesc, prometheus.GaugeValue, 0)
	default:
		c.logger.Warn("metrics could not probe whether the database takes writes", "error", err.Error())
	}
	if wait, err := c.health.LockWait(ctx); err != nil {
		c.logger.Warn("metrics could not read the lock waits", "error", err.Error())
	} else {
		ch <- prometheus.MustNewConstMetric(lockWaitDesc, prometheus.GaugeValue, wait.Seconds())
	}
}

// answers says whether the database answers a ping within an account's
// time.
func (c *stateCollector) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, accountReadTimeout)
	defer cancel()
	return c.river.pool.Ping(ctx) == nil
}

// collectQueue reads the jobs of every account, in two queries.
func (c *stateCollector) collectQueue(ctx context.Context, ch chan<- prometheus.Metric) {
	counts, err := c.river.jobCounts(ctx, nil)
	if err != nil {
		c.logger.Warn("metrics could not read the job queue", "error", err.Error())
		return
	}
	byState := map[[3]string]int64{} // the lanes of a sync summed
	for _, jc := range counts {
		byState[[3]string{jc.Account, jc.Kind, jc.State}] += jc.Count
	}
	for k, n := range byState {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(n), k[0], k[1], k[2])
	}
	ages, err := c.river.oldestRunning(ctx)
	if err != nil {
		c.logger.Warn("metrics could not read the running jobs", "error", err.Error())
		return
	}
	for _, ja := range ages {
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, ja.Running.Seconds(), ja.Account, ja.Kind)
	}
}

// collectAccounts reads the accounts' gauges, accountReads at
// once. Those the scrape's time ran out before are reported not read, in
// one line for all.
func (c *stateCollector) collectAccounts(ctx context.Context, ch chan<- prometheus.Metric, list []Registered) {
	slots := make(chan struct{}, accountReads)
	var wg sync.WaitGroup
	var late atomic.Int64
	for _, a := range list {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if ctx.Err() != nil {
				late.Add(1)
				ch <- prometheus.MustNewConstMetric(accountUpDesc, prometheus.GaugeValue, 0, a.Name)
				return
			}
			c.collectAccount(ctx, ch, a)
		})
	}
	wg.Wait()
	if n := late.Load(); n > 0 {
		c.logger.Warn("metrics ran out of time before reading some accounts: their gauges are missing from this scrape",
			"accounts", n, "scrape_timeout", scrapeTimeout.String())
	}
}

// collectAccount reads a's gauges within accountReadTimeout, sends those it
// could read and whether it read them all (usersync_account_scrape_up), and
// says whether it could read a's warehouse.
func (c *stateCollector) collectAccount(ctx context.Context, ch chan<- prometheus.Metric, a Registered) bool {
	ctx, cancel := context.WithTimeout(ctx, accountReadTimeout)
	defer cancel()
	ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, gaugeOf(a.Paused), a.Name)
	if a.SyncInterval > 0 {
		ch <- prometheus.MustNewConstMetric(syncIntervalDesc, prometheus.GaugeValue, a.SyncInterval.Seconds(), a.Name)
	}
	warehouse := c.collectWarehouse(ctx, ch, a)
	snapshots := c.collectSnapshots(ctx, ch, a)
	ch <- prometheus.MustNewConstMetric(accountUpDesc, prometheus.GaugeValue, gaugeOf(warehouse && snapshots), a.Name)
	return warehouse
}

// collectWarehouse reads the gauges of a's warehouse and says whether it
// could.
func (c *stateCollector) collectWarehouse(ctx context.Context, ch chan<- prometheus.Metric, a Registered) bool {
	st, err := a.Store.Status(ctx, 0)
	if err != nil {
		c.logger.Warn("metrics could not read the warehouse", "account", a.Name, "error", err.Error())
		return false
	}
	if st.Watermark != nil {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, time.Since(*st.Watermark).Seconds(), a.Name)
	}
	if st.LastSuccess != nil {
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, unixSeconds(*st.LastSuccess), a.Name)
	}
	ch <- prometheus.MustNewConstMetric(quarantineDesc, prometheus.GaugeValue, float64(st.Quarantined), a.Name)
	ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(st.Users), a.Name)
	return true
}

// listAccounts returns the accounts, none when list is nil or fails
// (logged: the queue's series are still worth reporting).
func listAccounts(ctx context.Context, list ListAccounts, logger *slog.Logger) []Registered {
	if list == nil {
		return nil
	}
	as, err := list(ctx, nil)
	if err != nil {
		logger.Warn("metrics could not read the accounts", "error", err.Error())
		return nil
	}
	return as
}

var (
	requestsDesc = prometheus.NewDesc("usersync_api_requests_total", "API requests sent, by account and HTTP status (0: no response).", []string{"account", "status"}, nil)
	limitedDesc  = prometheus.NewDesc("usersync_api_rate_limited_total", "API responses with status 429, by account.", []string{"account"}, nil)
	retriesDesc  = prometheus.NewDesc("usersync_api_retries_total", "API requests retried after a fault, by account.", []string{"account"}, nil)
	budgetDesc   = prometheus.NewDesc("usersync_api_ratelimit_remaining", "Requests left in the account's API rate-limit window, as last reported.", []string{"account"}, nil)
	limitDesc    = prometheus.NewDesc("usersync_api_ratelimit_limit", "Requests the API allows the account in its rate-limit window (x-ratelimit-limit), as last reported.", []string{"account"}, nil)
)

// apiTotals are the counters of an account's API clients that were
// replaced: a replacement continues them, so the counters never go back.
type apiTotals struct {
	byStatus             map[int]int64
	rateLimited, retries int64
}

// apiCollector exposes the API clients' own counters, one client per
// account at a time.
type apiCollector struct {
	mu      sync.Mutex
	clients map[string]*jsonapi.Client
	retired map[string]*apiTotals
}

func (c *apiCollector) watch(account string, client *jsonapi.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.clients[account]; old != client {
		c.fold(account, old)
	}
	c.clients[account] = client
}

// forget stops reading account's client, keeping its counters.
func (c *apiCollector) forget(account string, client *jsonapi.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients[account] == client {
		c.fold(account, client)
		delete(c.clients, account)
	}
}

// fold adds the counters of old (nil: none) to account's retired ones.
func (c *apiCollector) fold(account string, old *jsonapi.Client) {
	if old == nil {
		return
	}
	t := c.retired[account]
	if t == nil {
		t = &apiTotals{byStatus: map[int]int64{}}
		c.retired[account] = t
	}
	st := old.Stats()
	for status, n := range st.ByStatus {
		t.byStatus[status] += n
	}
	t.rateLimited += st.RateLimited
	t.retries += st.Retries
}

func (c *apiCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- limitedDesc
	ch <- retriesDesc
	ch <- budgetDesc
	ch <- limitDesc
}

func (c *apiCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for account, t := range c.retired {
		if c.clients[account] == nil {
			c.collect(ch, account, jsonapi.Stats{RateLimit: jsonapi.RateLimit{Remaining: -1, Limit: -1}}, t)
		}
	}
	for account, client := range c.clients {
		t := c.retired[account]
		if t == nil {
			t = &apiTotals{}
		}
		c.collect(ch, account, client.Stats(), t)
	}
}

// collect sends the counters of account: st, its client's, plus t, its
// replaced clients'.
func (c *apiCollector) collect(ch chan<- prometheus.Metric, account string, st jsonapi.Stats, t *apiTotals) {
	byStatus := map[int]int64{}
	for status, n := range t.byStatus {
		byStatus[status] += n
	}
	for status, n := range st.ByStatus {
		byStatus[status] += n
	}
	for status, n := range byStatus {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), account, strconv.Itoa(status))
	}
	ch <- prometheus.MustNewConstMetric(limitedDesc, prometheus.CounterValue, float64(st.RateLimited+t.rateLimited), account)
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(st.Retries+t.retries), account)
	if st.RateLimit.Remaining >= 0 {
		ch <- prometheus.MustNewConstMetric(budgetDesc, prometheus.GaugeValue, float64(st.RateLimit.Remaining), account)
	}
	if st.RateLimit.Limit >= 0 {
		ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(st.RateLimit.Limit), account)
	}
}

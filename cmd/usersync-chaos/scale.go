package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/usersync/usersync/sync/apisim"
)

// scaleOptions are the flags of the scale run.
type scaleOptions struct {
	on                               bool
	accounts, accountUsers           int
	large, largeUsers                int
	faulty, revoked                  int
	replicas, workers, addParallel   int
	syncEvery, reconcileEvery, tick  time.Duration
	after, restartEvery, convergeMax time.Duration
	churn                            bool
	// breakAccount, when set, deletes one user row of that account's
	// warehouse before the checks, which must then fail (TestScaleShort).
	breakAccount string
}

func (s scaleOptions) String() string {
	return fmt.Sprintf("%d accounts of %d users (%d of %d), %d faulty, %d revoked, %d replicas, syncs @every %s, reconciles @every %s",
		s.accounts, s.accountUsers, s.large, s.largeUsers, s.faulty, s.revoked, s.replicas, s.syncEvery, s.reconcileEvery)
}

// scaleFlags registers the scale run's flags; the defaults are the issue's
// full size.
func scaleFlags(fs *flag.FlagSet, s *scaleOptions) {
	fs.BoolVar(&s.on, "scale", false, "instead of faults, the scale run: many accounts registered with usersync accounts add, served by worker replicas with rolling restarts; prints a table of figures and checks every account")
	fs.IntVar(&s.accounts, "accounts", 500, "scale: registered accounts")
	fs.IntVar(&s.accountUsers, "account-users", 2000, "scale: users of each account")
	fs.IntVar(&s.large, "large", 3, "scale: accounts (the first ones) with -large-users users instead")
	fs.IntVar(&s.largeUsers, "large-users", 100000, "scale: users of each large account")
	fs.IntVar(&s.faulty, "faulty", 10, "scale: accounts (the last ones) whose API sends 5xx, 429s or slow pages, in turn")
	fs.IntVar(&s.revoked, "revoked", 2, "scale: accounts (just before the faulty ones) whose token is revoked once every account is mirrored")
	fs.IntVar(&s.replicas, "replicas", 2, "scale: worker processes")
	fs.IntVar(&s.workers, "workers", 4, "scale: USERSYNC_WORKERS of each worker process (incremental syncs at once)")
	fs.IntVar(&s.addParallel, "add-parallel", 4, "scale: accounts add commands run at once (they take the migration lock in turn)")
	fs.DurationVar(&s.syncEvery, "sync-every", 20*time.Second, "scale: every account's sync schedule (@every)")
	fs.DurationVar(&s.reconcileEvery, "reconcile-every", 5*time.Minute, "scale: every account's reconcile schedule (@every)")
	fs.DurationVar(&s.tick, "fleet-tick", 2*time.Second, "scale: USERSYNC_FLEET_TICK")
	fs.DurationVar(&s.after, "after", 3*time.Minute, "scale: how long the fleet runs on once every account is mirrored")
	fs.DurationVar(&s.restartEvery, "restart-every", time.Minute, "scale: a rolling restart of the replicas this often (0: none)")
	fs.DurationVar(&s.convergeMax, "scale-converge", 5*time.Minute, "scale: how long the accounts may take to converge once the churn stops, or to be first mirrored")
	fs.BoolVar(&s.churn, "churn", true, "scale: the simulated accounts keep changing (users updated and created) until the end")
	fs.StringVar(&s.breakAccount, "break-account", "", "scale: delete a user row of this account's warehouse before the checks (to see them fail)")
}

// validate reports the first inconsistent flag.
func (s scaleOptions) validate() error {
	switch {
	case s.accounts < 1 || s.accounts > 9999:
		return errors.New("-accounts must be between 1 and 9999")
	case s.large < 0 || s.large > s.accounts:
		return errors.New("-large must be between 0 and -accounts")
	case s.faulty < 0 || s.revoked < 0 || s.large+s.faulty+s.revoked > s.accounts:
		return errors.New("-large, -faulty and -revoked must not add up to more than -accounts")
	case s.replicas < 1 || s.workers < 1 || s.addParallel < 1:
		return errors.New("-replicas, -workers and -add-parallel must be at least 1")
	case s.syncEvery < time.Second || s.reconcileEvery < time.Second || s.tick < time.Second:
		return errors.New("-sync-every, -reconcile-every and -fleet-tick must be at least 1s")
	}
	return nil
}

// The kinds of the faulty accounts, in turn.
const (
	fault5xx = iota
	fault429
	faultSlow
	faultKindCount
)

var faultNames = [faultKindCount]string{"5xx", "429", "slow"}

// scaleAccount is one simulated account of the scale run.
type scaleAccount struct {
	name    string
	schema  string
	users   int
	fault   int // -1: none
	revoked bool
	server  *apisim.Server
	token   string
	apiURL  string
	addTook time.Duration
}

// healthy says whether the account has neither faults nor a revoked token.
func (a *scaleAccount) healthy() bool { return a.fault < 0 && !a.revoked }

// scaleRateLimit is every simulated account's hourly rate limit: high
// enough never to bind (USERSYNC_API_BUDGET=1), sent so that the workers'
// start checks see the x-ratelimit headers a real API sends.
const scaleRateLimit = 1_000_000

// scaleChurn is what changes in every account while the run lasts: users
// updated and created move their updatedAt, so incremental syncs see them.
var scaleChurn = apisim.Churn{Every: 10, Update: 3, Create: 1}

// faultKnobs are a faulty account's knobs.
func faultKnobs(kind int) apisim.Knobs {
	switch kind {
	case fault5xx:
		return apisim.Knobs{FaultRate: 0.2}
	case fault429:
		return apisim.Knobs{RateLimitEvery: 4, RetryAfter: time.Second}
	default:
		return apisim.Knobs{Latency: 300 * time.Millisecond}
	}
}

// scaleSimulator builds the fleet of simulated accounts beside a small
// default dataset (the USERSYNC_* account), and the scale run's layout:
// the large accounts first, the faulty ones last, the revoked ones just
// before them.
func (d *driver) scaleSimulator() http.Handler {
	so := d.o.scale
	var churn apisim.Churn
	if so.churn {
		churn = scaleChurn
	}
	def := d.defaultOptions(200, apisim.Knobs{Churn: churn, RateLimit: scaleRateLimit})
	fo := apisim.FleetOptions{Seed: d.o.seed, Default: &def}
	width := max(3, len(fmt.Sprint(so.accounts)))
	for i := range so.accounts {
		a := &scaleAccount{name: fmt.Sprintf("acct_%0*d", width, i+1), users: so.accountUsers, fault: -1}
		a.schema = schemaName + "_" + a.name // accounts add names it after the fleet
		if i < so.large {
			a.users = so.largeUsers
		}
		k := apisim.Knobs{}
		if i >= so.accounts-so.faulty {
			a.fault = (i - (so.accounts - so.faulty)) % faultKindCount
			k = faultKnobs(a.fault)
		}
		k.Churn, k.RateLimit = churn, scaleRateLimit
		a.revoked = i >= so.accounts-so.faulty-so.revoked && i < so.accounts-so.faulty
		fo.Accounts = append(fo.Accounts, apisim.AccountOptions{Name: a.name, Options: apisim.Options{Users: a.users, Knobs: k}})
		d.scaleAccounts = append(d.scaleAccounts, a)
	}
	d.fleet = apisim.NewFleet(fo)
	d.sim = d.fleet.Default()
	for i, fa := range d.fleet.Accounts() {
		d.scaleAccounts[i].server, d.scaleAccounts[i].token = fa.Server, fa.Token
	}
	return d.fleet
}

// scaleEnv is the fleet's settings in the scale run, after the driver's.
func (d *driver) scaleEnv() []string {
	so := d.o.scale
	return []string{"USERSYNC_SYNC_SCHEDULE=@every " + so.syncEvery.String(),
		"USERSYNC_RECONCILE_SCHEDULE=@every " + so.reconcileEvery.String(),
		"USERSYNC_FLEET_TICK=" + so.tick.String(), fmt.Sprintf("USERSYNC_WORKERS=%d", so.workers),
		"USERSYNC_PAGE_SIZE=1000", "USERSYNC_SHUTDOWN_TIMEOUT=20s", "USERSYNC_JOB_TIMEOUT=30m",
		"USERSYNC_LOG_FORMAT=json", "USERSYNC_LOG_LEVEL=warn", "USERSYNC_API_BUDGET=1"}
}

// scaleNames lists the names of the accounts a filter keeps.
func (d *driver) scaleNames(keep func(*scaleAccount) bool) string {
	var names []string
	for _, a := range d.scaleAccounts {
		if keep(a) {
			names = append(names, a.name)
		}
	}
	return strings.Join(names, ", ")
}

// scale is the scale run: every account registered through usersync
// accounts add, replicas started, rolling restarts while the fleet mirrors
// every account, the revoked tokens revoked once all are mirrored, then the
// churn stops, every account converges, and the table and the checks.
func (d *driver) scale(ctx context.Context) (passed, failed int) {
	d.env = append(d.env, d.scaleEnv()...)
	var faulty []string
	for _, a := range d.scaleAccounts {
		if a.fault >= 0 {
			faulty = append(faulty, a.name+" ("+faultNames[a.fault]+")")
		}
	}
	fmt.Fprintf(d.out, "scale: faulty accounts: %s\n", strings.Join(faulty, ", "))
	s := &scaleRun{d: d, peak: map[int]int64{}, steady: map[int]int64{}}
	if err := s.register(ctx); err != nil {
		fmt.Fprintf(d.out, "scale: registering the accounts: FAILED: %v\n", err)
		return 0, 1
	}
	if err := s.startReplicas(ctx); err != nil {
		fmt.Fprintf(d.out, "scale: starting the workers: FAILED: %v\n", err)
		return 0, 1
	}
	problems := s.loop(ctx)
	s.steadyEnds(ctx)
	problems = append(problems, s.converge(ctx)...)
	problems = append(problems, s.unionUnitesAll(ctx)...) // while the workers that make the views run
	problems = append(problems, s.stopReplicas()...)
	fig, err := s.measure(ctx)
	if err != nil {
		problems = append(problems, "measuring: "+err.Error())
	} else {
		fig.print(d.out, d.o.scale)
		s.printCost(ctx, d.out)
	}
	problems = append(problems, s.check(ctx, fig)...)
	for _, p := range problems {
		fmt.Fprintf(d.out, "scale: FAILED: %s\n", p)
	}
	if len(problems) > 0 {
		return 0, 1
	}
	return 1, 0
}

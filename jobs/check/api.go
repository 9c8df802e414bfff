package check

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/snapshot"
	"github.com/usersync/usersync/sync/warehouse/tokens"
)

const fixAPI = "check USERSYNC_API_URL and the network (DNS, proxy, firewall) between this host and the API; the detail says what was tried"

// checkAPI checks the API answers, accepts the credentials (with OAuth,
// after a refresh at the token endpoint) and sends its rate-limit headers,
// with one request: a page of one user, without a count.
func (c *checker) checkAPI(ctx context.Context) {
	if err := c.o.APISettings; err != nil {
		c.fail("api", err.Error(), "set the setting it names (usersync help settings lists them)")
		c.notChecked("token", "api")
		c.notChecked("budget", "api")
		return
	}
	oauth := c.o.OAuth
	client := c.o.API
	if client == nil {
		if oauth && !c.migrated { // the grant is stored in the warehouse
			c.notChecked("api", "migrations")
			c.notChecked("token", "migrations")
			c.notChecked("budget", "migrations")
			return
		}
		var err error
		if client, err = c.o.NewAPI(ctx); err != nil {
			c.results = append(c.results, Result{Name: "api", Detail: "not checked: no credential to send (see the token check)",
				Fix: "fix the token check first", after: "token"})
			c.fail("token", oneLine(err.Error()), c.o.AuthRemedy)
			c.notChecked("budget", "token")
			return
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := client.Get(cctx, "users", jsonapi.Query{}.Fields("user").PageSize(1).Count(false))
	host := apiHost(c.o.APIURL)
	var ae *jsonapi.AuthError
	var re *jsonapi.ResponseError
	switch {
	case err == nil:
		c.pass("api", "answered GET /api/v2/users at "+host)
		c.pass("token", c.tokenDetail(ctx, oauth))
		c.checkBudget(client.Stats().RateLimit)
	case errors.As(err, &ae) && errors.As(err, &re): // the API itself refused
		c.pass("api", fmt.Sprintf("answered at %s (%d: it refuses the credentials)", host, re.StatusCode))
		c.fail("token", oneLine(err.Error()), c.o.AuthRemedy)
		c.notChecked("budget", "token")
	case errors.Is(err, jobs.ErrAwaitingLogin): // a worker started before the login
		c.results = append(c.results, Result{Name: "api", Detail: "not checked: no access token to send (no OAuth refresh token is stored)",
			Fix: "fix the token check first", after: "token"})
		c.fail("token", oneLine(err.Error()), "run "+c.o.LoginCommand+" with the worker's settings and DATABASE_URL: the worker's jobs wait for it")
		c.notChecked("budget", "token")
	case errors.As(err, &ae): // the token endpoint refused the grant
		c.results = append(c.results, Result{Name: "api", Detail: "not checked: no access token to send (the token endpoint refused the grant)",
			Fix: "fix the token check first", after: "token"})
		c.fail("token", oneLine(err.Error()), c.o.AuthRemedy)
		c.notChecked("budget", "token")
	default:
		c.fail("api", oneLine(err.Error()), fixAPI)
		c.notChecked("token", "api")
		c.notChecked("budget", "api")
	}
}

// tokenDetail says which credential the API accepted and, for an OAuth
// grant, the scope its token endpoint said it holds.
func (c *checker) tokenDetail(ctx context.Context, oauth bool) string {
	if !oauth {
		return "the API accepts USERSYNC_API_TOKEN (a static token: no refresh, no scope to read)"
	}
	detail := "the token endpoint refreshed the grant and the API accepts the access token"
	if c.o.Grants == nil {
		return detail
	}
	info, err := c.o.Grants.Info(ctx)
	if err != nil || info.Scope == "" {
		return detail + "; the token endpoint did not say the scope"
	}
	return detail + "; scope " + tokens.ScopeLine(info.Scope)
}

// checkBudget checks the API sent its rate-limit headers, which
// USERSYNC_API_BUDGET's share is taken of.
func (c *checker) checkBudget(rl jsonapi.RateLimit) {
	budget := c.o.APIBudget
	if rl.Limit <= 0 || rl.Remaining < 0 {
		c.fail("budget", "the API sent no readable x-ratelimit-limit and x-ratelimit-remaining headers",
			fmt.Sprintf("check that no proxy strips the x-ratelimit-* headers; without them usersync keeps USERSYNC_API_BUDGET=%g of the documented %d requests an hour",
				budget, jsonapi.DefaultRateLimit))
		return
	}
	kept := jsonapi.Kept(rl.Limit, budget)
	reset := "no readable x-ratelimit-reset (the window is taken to end an hour after the first reading)"
	if !rl.Reset.IsZero() {
		reset = "resets " + rl.Reset.UTC().Format(time.RFC3339)
	}
	state := ""
	if rl.Remaining <= kept {
		state = "; spent: runs wait for the reset"
	}
	c.pass("budget", fmt.Sprintf("%d of %d requests left, %s; USERSYNC_API_BUDGET=%g keeps %d for the token owner's other tools%s",
		rl.Remaining, rl.Limit, reset, budget, kept, state))
}

// checkSnapshots writes and removes a small file in the deployment's
// snapshot folder.
func (c *checker) checkSnapshots(ctx context.Context) {
	cfg := c.o
	if cfg.SnapshotDir == "off" {
		c.pass("snapshots", "off (USERSYNC_SNAPSHOT_DIR=off)")
		return
	}
	fix := "make USERSYNC_SNAPSHOT_DIR a folder this user may create folders and files in, or set it to one (off disables snapshots)"
	if strings.HasPrefix(cfg.SnapshotDir, "s3://") {
		fix = "check the bucket, USERSYNC_S3_ENDPOINT and USERSYNC_S3_REGION, and that the credentials (USERSYNC_S3_ACCESS_KEY_ID and USERSYNC_S3_SECRET_ACCESS_KEY, or the instance's role) may put and delete objects under the prefix"
	}
	dest, err := snapshot.ParseDestination(cfg.SnapshotDir, cfg.S3)
	if err != nil {
		c.fail("snapshots", "USERSYNC_SNAPSHOT_DIR: "+oneLine(err.Error()), fix)
		return
	}
	folder, err := snapshot.Probe(ctx, dest, cfg.Store.Schema())
	if err != nil {
		c.fail("snapshots", oneLine(err.Error()), fix)
		return
	}
	c.pass("snapshots", "wrote and removed a file in "+folder)
}

// checkSchedules says when each schedule runs next. A schedule that does not
// parse never gets here: the settings refuse it (exit 2).
func (c *checker) checkSchedules() {
	if err := c.o.SchedulesErr; err != nil {
		c.fail("schedules", err.Error(), "fix the setting it names")
		return
	}
	now := time.Now()
	var parts []string
	for _, sch := range c.o.Schedules {
		if sch.Next == nil {
			parts = append(parts, sch.What+" off")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %q (next %s)", sch.What, sch.Spec, sch.Next.Next(now).UTC().Format(time.RFC3339)))
	}
	c.pass("schedules", strings.Join(parts, ", "))
}

// apiHost is the host of the API's URL, for messages.
func apiHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

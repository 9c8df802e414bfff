package deploy_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// deploymentLabels tell one deployment's series from another's: schema is
// set by the worker on every series (USERSYNC_SCHEMA), namespace and job by
// the scrape when it has them.
var deploymentLabels = []string{"namespace", "job", "schema"}

var (
	promAggregation = regexp.MustCompile(`\b(sum|min|max|avg|count|group|topk|bottomk|quantile|stddev|stdvar)\s*(\bby\s*\(([^)]*)\))?\s*\(`)
	promOn          = regexp.MustCompile(`\bon\s*\(([^)]*)\)`)
	promLabelList   = regexp.MustCompile(`\s*,\s*`)
)

// perDeployment returns what in a PromQL expression mixes deployments: an
// aggregation that does not keep every label of want, a vector match on()
// that ignores one, a bare absent() (it fires only once every deployment is
// gone).
func perDeployment(expr string, want []string) []string {
	var bad []string
	keeps := func(list string) bool {
		labels := promLabelList.Split(strings.TrimSpace(list), -1)
		for _, w := range want {
			if !slices.Contains(labels, w) {
				return false
			}
		}
		return true
	}
	for _, m := range promAggregation.FindAllStringSubmatch(expr, -1) {
		if m[2] == "" || !keeps(m[3]) {
			bad = append(bad, strings.TrimSpace(m[0]))
		}
	}
	for _, m := range promOn.FindAllStringSubmatch(expr, -1) {
		if !keeps(m[1]) {
			bad = append(bad, m[0])
		}
	}
	if regexp.MustCompile(`\babsent\s*\(`).MatchString(expr) {
		bad = append(bad, "absent(")
	}
	return bad
}

func TestPerDeployment(t *testing.T) {
	t.Parallel()
	want := []string{"namespace", "job", "schema"}
	for expr, bad := range map[string][]string{
		`max(x) > 1 unless on() sum(y) > 0`:                                             {"max(", "sum(", "on()"},
		`sum by (kind) (rate(x[5m]))`:                                                   {"sum by (kind) ("},
		`max by (namespace, job, schema, kind) (x) unless on(namespace, job, schema) y`: nil,
		`absent(x)`: {"absent("},
		`group by (namespace,job,schema) (max_over_time(x[1d])) or absent_over_time(x[1d])`: nil,
	} {
		if got := perDeployment(expr, want); !slices.Equal(got, bad) {
			t.Errorf("perDeployment(%q) = %q, want %q", expr, got, bad)
		}
	}
}

// TestMonitoringRulesPerDeployment: every alert rule keeps deployments
// apart (with two deployments in one Prometheus the
// rules' bare max(), sum() and absent() mixed them).
func TestMonitoringRulesPerDeployment(t *testing.T) {
	t.Parallel()
	for _, r := range alertRules(t) {
		if bad := perDeployment(r.Expr, deploymentLabels); len(bad) > 0 {
			t.Errorf("alert %s mixes deployments: %q; aggregate by and match on (%s)", r.Alert, bad, strings.Join(deploymentLabels, ", "))
		}
	}
}

// TestMonitoringDashboardPerDeployment: the dashboard has namespace, job and
// deployment (schema) variables, every series it selects is filtered by
// them, and every aggregation keeps deployments apart.
func TestMonitoringDashboardPerDeployment(t *testing.T) {
	t.Parallel()
	var d struct {
		Templating struct {
			List []struct {
				Name, Type, Definition string
			}
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, "deploy/monitoring/grafana-dashboard.json")), &d); err != nil {
		t.Fatal(err)
	}
	for _, label := range deploymentLabels {
		i := slices.IndexFunc(d.Templating.List, func(v struct{ Name, Type, Definition string }) bool { return v.Name == label })
		if i < 0 || d.Templating.List[i].Type != "query" || !strings.Contains(d.Templating.List[i].Definition, "label_values(usersync_") {
			t.Errorf("the dashboard has no query variable %s listing the label's values", label)
		}
	}
	selector := regexp.MustCompile(`\b(usersync_[a-z_]+)(\{[^}]*\})?`)
	for _, e := range dashboardQueries(t) {
		for _, m := range selector.FindAllStringSubmatch(e, -1) {
			for _, label := range deploymentLabels {
				if !strings.Contains(m[2], label+`=~"$`+label+`"`) {
					t.Errorf("dashboard query %q: %s is not filtered by %s=~\"$%s\"", e, m[1], label, label)
				}
			}
		}
		if bad := perDeployment(e, deploymentLabels); len(bad) > 0 {
			t.Errorf("dashboard query %q mixes deployments: %q", e, bad)
		}
	}
}

// fleetAlerts are the alerts about the fleet (its database, its workers),
// not about one account.
var fleetAlerts = []string{"UsersyncDatabaseDown", "UsersyncDatabaseRefusesWrites", "UsersyncLockBlocked", "UsersyncWorkerAbsent"}

// TestMonitoringRulesPerAccount: every alert about an account
// keeps accounts apart as it keeps deployments apart, so that its labels
// name the account and one account's success never hides another's failure.
func TestMonitoringRulesPerAccount(t *testing.T) {
	t.Parallel()
	want := append(slices.Clone(deploymentLabels), "account")
	for _, r := range alertRules(t) {
		if slices.Contains(fleetAlerts, r.Alert) {
			continue
		}
		if bad := perDeployment(r.Expr, want); len(bad) > 0 {
			t.Errorf("alert %s mixes accounts: %q; aggregate by and match on (%s)", r.Alert, bad, strings.Join(want, ", "))
		}
		if !strings.Contains(r.Annotations["summary"], "$labels.account") {
			t.Errorf("alert %s's summary does not name the account", r.Alert)
		}
	}
}

// TestMonitoringDashboardPerAccount: the dashboard has an
// account variable, and every query about accounts (all but the database's,
// which is the fleet's) is filtered by it and keeps accounts apart.
func TestMonitoringDashboardPerAccount(t *testing.T) {
	t.Parallel()
	dash := readFile(t, "deploy/monitoring/grafana-dashboard.json")
	if !strings.Contains(dash, `"name": "account"`) || !strings.Contains(dash, `label_values(usersync_users_live, account)`) {
		t.Error("the dashboard has no query variable account listing the label's values")
	}
	want := append(slices.Clone(deploymentLabels), "account")
	for _, e := range dashboardQueries(t) {
		if strings.Contains(e, "usersync_database_up") {
			continue
		}
		if !strings.Contains(e, `account=~"$account"`) {
			t.Errorf("dashboard query %q is not filtered by account=~\"$account\"", e)
		}
		if bad := perDeployment(e, want); len(bad) > 0 {
			t.Errorf("dashboard query %q mixes accounts: %q", e, bad)
		}
	}
}

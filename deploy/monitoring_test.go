package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/cmd/usersync/cli"
	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/apisim"
)

// runbookBase is where every alert's runbook_url points: a section of
// docs/operations.md on the repository's main branch.
const runbookBase = "https://github.com/usersync/usersync/blob/main/docs/operations.md#"

type alertRule struct {
	Alert, Expr, For    string
	Labels, Annotations map[string]string
}

type ruleGroups struct {
	Groups []struct {
		Name  string
		Rules []alertRule
	}
}

// alertRules reads monitoring/prometheus-rules.yaml and checks that
// monitoring/prometheus-rule.yaml, the Prometheus Operator's form, holds the
// same rules.
func alertRules(t *testing.T) []alertRule {
	t.Helper()
	var plain ruleGroups
	if err := yaml.Unmarshal([]byte(readFile(t, "deploy/monitoring/prometheus-rules.yaml")), &plain); err != nil {
		t.Fatalf("deploy/monitoring/prometheus-rules.yaml: %v", err)
	}
	var op struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string
		Metadata   struct{ Name string }
		Spec       ruleGroups
	}
	if err := yaml.Unmarshal([]byte(readFile(t, "deploy/monitoring/prometheus-rule.yaml")), &op); err != nil {
		t.Fatalf("deploy/monitoring/prometheus-rule.yaml: %v", err)
	}
	if op.APIVersion != "monitoring.coreos.com/v1" || op.Kind != "PrometheusRule" || op.Metadata.Name == "" {
		t.Errorf("deploy/monitoring/prometheus-rule.yaml is a %s %s named %q, want a monitoring.coreos.com/v1 PrometheusRule",
			op.APIVersion, op.Kind, op.Metadata.Name)
	}
	if !reflect.DeepEqual(plain, op.Spec) {
		t.Error("deploy/monitoring/prometheus-rule.yaml's spec.groups differ from deploy/monitoring/prometheus-rules.yaml's groups")
	}
	var rules []alertRule
	for _, g := range plain.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// dashboardQueries returns the PromQL of every target of the Grafana
// dashboard's panels, checking each asks the dashboard's data source.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	type panel struct {
		Title      string
		Type       string
		Datasource struct{ UID string }
		Targets    []struct {
			Expr       string
			Datasource struct{ UID string }
		}
	}
	var d struct {
		Title, UID string
		Panels     []panel
		Templating struct{ List []struct{ Name, Type string } }
	}
	if err := json.Unmarshal([]byte(readFile(t, "deploy/monitoring/grafana-dashboard.json")), &d); err != nil {
		t.Fatalf("deploy/monitoring/grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Templating.List) == 0 || d.Templating.List[0].Type != "datasource" {
		t.Error("deploy/monitoring/grafana-dashboard.json needs a title, a uid and a data source variable")
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource.UID != "${datasource}" {
			t.Errorf("dashboard panel %q has no query, or does not ask the data source variable", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Datasource.UID != "${datasource}" {
				t.Errorf("dashboard panel %q has a target without a query or the data source variable", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promToken    = regexp.MustCompile(`[0-9.]*[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords = []string{"and", "or", "unless", "offset", "bool", "inf", "nan", "by", "without", "on", "ignoring"}
)

// promMetrics returns the metric names a PromQL expression selects: its
// identifiers, once strings, label matchers, ranges and grouping labels are
// removed, that are neither functions, keywords nor numbers.
func promMetrics(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, m := range promToken.FindAllStringSubmatch(s, -1) {
		tok := m[0]
		if m[1] != "" || strings.ContainsAny(tok[:1], "0123456789.") || slices.Contains(promKeywords, strings.ToLower(tok)) {
			continue
		}
		out = append(out, tok)
	}
	return out
}

func TestPromMetrics(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		`sum by (kind) (increase(usersync_runs_total{status="failed", x=~"a|b"}[1h])) >= 3 unless on(kind) foo > 0`: {"usersync_runs_total", "foo"},
		`histogram_quantile(0.95, sum by (le) (rate(a_bucket[$__rate_interval])))`:                                  {"a_bucket"},
		`max(x offset 1h) or 0 * max by (kind, state) (y) > bool 1e3`:                                               {"x", "y"},
		`absent(up)`: {"up"},
	}
	for expr, want := range tests {
		if got := promMetrics(expr); !slices.Equal(got, want) {
			t.Errorf("promMetrics(%q) = %v, want %v", expr, got, want)
		}
	}
}

// githubAnchors returns the anchors GitHub gives a Markdown file's headings:
// lower case, punctuation dropped, spaces to '-', repeats numbered.
func githubAnchors(md string) map[string]bool {
	out := map[string]bool{}
	fence := false
	drop := regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		h := strings.TrimLeft(line, "#")
		if fence || h == line || len(line)-len(h) > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")
		for i, base := 1, a; out[a]; i++ {
			a = base + "-" + strconv.Itoa(i)
		}
		out[a] = true
	}
	return out
}

func TestGitHubAnchors(t *testing.T) {
	t.Parallel()
	md := "# Operating usersync\n## Status, metrics and alerts\n```sh\n# not a heading\n```\n" +
		"### `usersync.users` (table)\n## History: user_versions\n### UsersyncStale\n### UsersyncStale\n####### seven\n#no space\n"
	want := []string{"operating-usersync", "status-metrics-and-alerts", "usersyncusers-table", "history-user_versions",
		"usersyncstale", "usersyncstale-1"}
	got := githubAnchors(md)
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q in %v", a, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors %v, want %v", got, want)
	}
}

// TestMonitoringRules: every alert has a severity, a summary, a description
// and a runbook_url to a section of docs/operations.md that exists, and
// selects at least one metric.
func TestMonitoringRules(t *testing.T) {
	t.Parallel()
	rules := alertRules(t)
	if len(rules) < 8 {
		t.Fatalf("found %d alert rules, want the eight or more docs/operations.md has runbooks for", len(rules))
	}
	anchors := githubAnchors(readFile(t, "docs/operations.md"))
	seen := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" || seen[r.Alert] || len(promMetrics(r.Expr)) == 0 {
			t.Errorf("rule %q: an alert needs a unique name and an expression selecting a metric", r.Alert)
		}
		seen[r.Alert] = true
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) ||
			r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("alert %s needs labels.severity (critical, warning or info), annotations.summary and annotations.description", r.Alert)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
		if !ok || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url %q is not %s<a heading of docs/operations.md>", r.Alert, r.Annotations["runbook_url"], runbookBase)
		}
	}
}

// rulesTestFile holds promtool's unit tests of the alert rules.
const rulesTestFile = "deploy/monitoring/rules_test.yaml"

// TestMonitoringRulesTestsCoverEveryAlert: rules_test.yaml tests the rules
// file, and every alert there has a case where it must fire and one where it
// must not; it names no alert the rules lack.
func TestMonitoringRulesTestsCoverEveryAlert(t *testing.T) {
	t.Parallel()
	var f struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name  string
			Cases []struct {
				Alertname string
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	if err := yaml.Unmarshal([]byte(readFile(t, rulesTestFile)), &f); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	if !slices.Equal(f.RuleFiles, []string{"prometheus-rules.yaml"}) {
		t.Errorf("%s tests rule_files %v, want [prometheus-rules.yaml]", rulesTestFile, f.RuleFiles)
	}
	fires, silent := map[string]int{}, map[string]int{}
	for _, g := range f.Tests {
		for _, c := range g.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname]++
			} else {
				silent[c.Alertname]++
			}
		}
	}
	alerts := map[string]bool{}
	for _, r := range alertRules(t) {
		alerts[r.Alert] = true
		if fires[r.Alert] == 0 || silent[r.Alert] == 0 {
			t.Errorf("%s has %d cases where %s must fire and %d where it must not; it needs both",
				rulesTestFile, fires[r.Alert], r.Alert, silent[r.Alert])
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("%s tests alert %s, which deploy/monitoring/prometheus-rules.yaml lacks", rulesTestFile, name)
		}
	}
	for name := range silent {
		if !alerts[name] {
			t.Errorf("%s tests alert %s, which deploy/monitoring/prometheus-rules.yaml lacks", rulesTestFile, name)
		}
	}
}

// TestMonitoringRulesUnitTests runs `promtool test rules` on rules_test.yaml:
// each alert fires on the series where it must and stays silent on the rest
// (promtool check rules checks only the syntax). make test installs promtool
// (Debian's prometheus package) when it is missing; under CI=true a missing
// promtool fails the test.
func TestMonitoringRulesUnitTests(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool is not installed: run make test, which installs it, or apt-get install prometheus"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// promtool evaluates every case of two deployments and two accounts:
	// seconds on an idle machine, over two minutes on a loaded one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "test", "rules", filepath.Join(root, rulesTestFile)).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", rulesTestFile, err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules %s says no SUCCESS:\n%s", rulesTestFile, out)
	}
}

// TestMonitoringDashboard: the dashboard shows what the issue asked for.
func TestMonitoringDashboard(t *testing.T) {
	t.Parallel()
	var queried []string
	for _, e := range dashboardQueries(t) {
		queried = append(queried, promMetrics(e)...)
	}
	for _, want := range []string{"usersync_runs_total", "usersync_rows_total", "usersync_api_requests_total",
		"usersync_api_rate_limited_total", "usersync_api_ratelimit_remaining", "usersync_watermark_lag_seconds",
		"usersync_quarantine_unresolved", "usersync_jobs", "usersync_jobs_oldest_running_seconds",
		"usersync_snapshot_last_success_timestamp_seconds", "usersync_snapshot_last_bytes", "usersync_snapshots_total",
		"usersync_lock_waits_total"} {
		if !slices.Contains(queried, want) {
			t.Errorf("the dashboard shows no %s", want)
		}
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestMonitoringMetricsExported runs a worker against the simulated API until
// it has synced and reconciled, scrapes its /metrics, and checks that every
// metric the alert rules and the dashboard query is one it exports.
func TestMonitoringMetricsExported(t *testing.T) {
	t.Parallel()
	queried := map[string][]string{}
	for _, r := range alertRules(t) {
		for _, m := range promMetrics(r.Expr) {
			queried[m] = append(queried[m], "alert "+r.Alert)
		}
	}
	for _, e := range dashboardQueries(t) {
		for _, m := range promMetrics(e) {
			queried[m] = append(queried[m], "the dashboard")
		}
	}
	exported := scrapeWorker(t)
	for name, where := range queried {
		if !exported[name] {
			t.Errorf("%s queries %s, which the worker does not export", strings.Join(slices.Compact(where), " and "), name)
		}
	}
}

// scrapeWorker runs `usersync worker` with syncs and reconciles every second
// (its fleet ticking every second to serve them) and a snapshot after each
// sync until /metrics counts a successful sync, a reconcile and a snapshot,
// and returns the names of the samples of that scrape.
func scrapeWorker(t *testing.T) map[string]bool {
	t.Helper()
	sim := apisim.New(apisim.Options{Seed: 5, Users: 300, Knobs: apisim.Knobs{RateLimit: 100_000}})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	pool := schematest.NewPool(t, 2)
	name := schematest.NewSchemaName(t, pool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": name, "USERSYNC_READER_ROLE": "",
		"USERSYNC_API_URL": srv.URL, "USERSYNC_API_TOKEN": "deploy-test-token", "USERSYNC_HTTP_ADDR": addr,
		"USERSYNC_SYNC_SCHEDULE": "@every 1s", "USERSYNC_RECONCILE_SCHEDULE": "@every 1s", "USERSYNC_SCHEDULE_MIN_INTERVAL": "1s", "USERSYNC_FLEET_TICK": "1s",
		"USERSYNC_SNAPSHOT_SCHEDULE": "@hourly", "USERSYNC_SNAPSHOT_DIR": t.TempDir(), "USERSYNC_SHUTDOWN_TIMEOUT": "5s"}
	var logs lockedBuffer
	if code := cli.Main(context.Background(), []string{"migrate"}, environOf(env), io.Discard, &logs); code != cli.ExitOK {
		t.Fatalf("usersync migrate: exit %d: %s", code, logs.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Main(ctx, []string{"worker"}, environOf(env), io.Discard, &logs) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the worker did not stop; logs:\n%s", logs.String())
		}
	}()
	var body string
	for deadline := time.Now().Add(60 * time.Second); ; {
		body = getMetrics(ctx, addr)
		// Every series names its deployment: schema="<USERSYNC_SCHEMA>".
		if strings.Contains(body, `usersync_runs_total{account="default",kind="incremental",schema="`+name+`",status="succeeded"}`) &&
			strings.Contains(body, `usersync_runs_total{account="default",kind="reconcile",schema="`+name+`",`) &&
			strings.Contains(body, `usersync_snapshot_last_success_timestamp_seconds{account="default",schema="`+name+`"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no successful sync, reconcile and snapshot on /metrics after 60s; logs:\n%s", logs.String())
		}
		<-time.After(200 * time.Millisecond)
	}
	// The snapshot job that set the gauge counted itself (written, or
	// skipped because nothing changed since the last one).
	if regexp.MustCompile(`(?m)^usersync_snapshots_total\{account="default",reason="(unchanged)?",result="(written|skipped)",schema="`+name+`"\} [1-9]`).FindString(body) == "" {
		t.Errorf("a snapshot succeeded but usersync_snapshots_total counts none:\n%s", grepMetric(body, "usersync_snapshot"))
	}
	if regexp.MustCompile(`(?m)^usersync_snapshot_last_bytes\{account="default",schema="`+name+`"\} [1-9]`).FindString(body) == "" {
		t.Errorf("usersync_snapshot_last_bytes is not the size of the snapshot written:\n%s", grepMetric(body, "usersync_snapshot"))
	}
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	t.Logf("the worker exports %d metrics: %s", len(keys), strings.Join(keys, " "))
	return names
}

// getMetrics returns the body of /metrics, or "" while the worker does not
// answer.
func getMetrics(ctx context.Context, addr string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// grepMetric returns the lines of a /metrics body that start with prefix.
func grepMetric(body, prefix string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

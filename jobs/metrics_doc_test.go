package jobs

import (
	"log/slog"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usersync/usersync/sync/jsonapi"
)

// TestMetricsDocumented: every metric of usersync's own that the worker
// exports is in docs/operations.md's table of metrics, and every metric the
// table lists is exported.
func TestMetricsDocumented(t *testing.T) {
	t.Parallel()
	client, err := jsonapi.NewClient(jsonapi.Options{BaseURL: "http://127.0.0.1:1", Auth: jsonapi.StaticToken("x")})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(MetricsConfig{Schema: "usersync", Logger: slog.New(slog.DiscardHandler)})
	m.WatchAPI(DefaultAccount, client)
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range m.own {
		c.Describe(ch)
	}
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var exported []string
	for d := range ch {
		exported = append(exported, fqName.FindStringSubmatch(d.String())[1])
	}
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, row := range regexp.MustCompile("(?m)^\\| `(usersync_[a-z_]+)").FindAllSubmatch(doc, -1) {
		documented = append(documented, string(row[1]))
	}
	if len(exported) < 10 || len(documented) < 10 {
		t.Fatalf("read %d exported and %d documented metrics: the test no longer finds them", len(exported), len(documented))
	}
	for _, name := range exported {
		if !slices.Contains(documented, name) {
			t.Errorf("%s is exported but not in docs/operations.md's table of metrics", name)
		}
	}
	for _, name := range documented {
		if !slices.Contains(exported, name) {
			t.Errorf("docs/operations.md lists %s, which the worker does not export", name)
		}
	}
}

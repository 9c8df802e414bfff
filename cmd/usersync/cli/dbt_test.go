package cli

import (
	"cmp"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/schema/dbt"
)

// dbtGoldens pins the sources.yml of the default settings for each form:
// the default (dbt 1.10.8 and later), 1.9.5 to 1.10.7, and 1.8.0 to 1.9.4.
var dbtGoldens = map[string]string{"": "testdata/dbt_sources.golden.yml", "1.9.5": "testdata/dbt_sources_1.9.5.golden.yml",
	"1.8": "testdata/dbt_sources_1.8.golden.yml"}

// dbtFile is dbtParsed under the name the accounts' tests read it by.
type dbtFile = dbtParsed

// dbtPeriod is a freshness threshold as read back.
type dbtPeriod struct {
	Count  int64
	Period string
}

// dbtParsedFreshness is a freshness block as read back.
type dbtParsedFreshness struct {
	WarnAfter  dbtPeriod `yaml:"warn_after"`
	ErrorAfter dbtPeriod `yaml:"error_after"`
	Filter     string
}

// dbtParsed is what the tests read back from the sources.yml.
type dbtParsed struct {
	Version int
	Sources []dbtParsedSource
}

type dbtParsedSource struct {
	Name, Schema string
	Config       dbtParsedConf
	Tables       []dbtParsedTable
}

type dbtParsedConf struct {
	Freshness     *dbtParsedFreshness
	LoadedAtField string `yaml:"loaded_at_field"`
	LoadedAtQuery string `yaml:"loaded_at_query"`
}

type dbtParsedTable struct {
	Name          string
	LoadedAtField string `yaml:"loaded_at_field"`
	Freshness     *dbtParsedFreshness
	Config        dbtParsedConf
	DataTests     []any `yaml:"data_tests"`
	Columns       []dbtParsedColumn
}

type dbtParsedColumn struct {
	Name, Description string
	DataType          string `yaml:"data_type"`
	DataTests         []any  `yaml:"data_tests"`
	Meta              map[string]string
	Tags              []string
	Config            struct {
		Meta map[string]string
		Tags []string
	}
}

// freshness is the table's freshness, in whichever form it was written, the
// source's when the table has none: the block, and the loaded_at_field or
// the loaded_at_query.
func (src dbtParsedSource) freshness(tbl dbtParsedTable) (f *dbtParsedFreshness, field, query string) {
	if f = cmp.Or(tbl.Freshness, tbl.Config.Freshness); f != nil {
		return f, cmp.Or(tbl.LoadedAtField, tbl.Config.LoadedAtField), tbl.Config.LoadedAtQuery
	}
	return src.Config.Freshness, src.Config.LoadedAtField, src.Config.LoadedAtQuery
}

// dbtOutput runs usersync schema --format dbt with env and args and parses
// what it prints.
func dbtOutput(t *testing.T, env map[string]string, args ...string) (string, dbtParsed) {
	t.Helper()
	code, out, errs := run(t, env, append([]string{"schema", "--format", "dbt"}, args...)...)
	if code != ExitOK {
		t.Fatalf("schema --format dbt %v: exit %d: %s", args, code, errs)
	}
	var p dbtParsed
	if err := yaml.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("the dbt sources do not parse as YAML: %v", err)
	}
	if p.Version != 2 || len(p.Sources) != 1 || len(p.Sources[0].Tables) < 10 {
		t.Fatalf("the dbt sources are not one source of version 2 with its tables:\n%s", out)
	}
	return out, p
}

// dbtVersionArgs are the arguments asking for version ("": the default).
func dbtVersionArgs(version string) []string {
	if version == "" {
		return nil
	}
	return []string{"--dbt-version", version}
}

// TestSchemaDBTGolden pins the sources.yml of the default settings, for
// each form.
func TestSchemaDBTGolden(t *testing.T) {
	t.Parallel()
	for version, golden := range dbtGoldens {
		out, p := dbtOutput(t, nil, dbtVersionArgs(version)...)
		if p.Sources[0].Name != "usersync" {
			t.Errorf("the source is %s, not usersync (USERSYNC_SCHEMA)", p.Sources[0].Name)
		}
		if *update {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("usersync schema --format dbt %v differs from %s (go test ./cmd/usersync/cli -run TestSchemaDBTGolden -update, then review the diff)", dbtVersionArgs(version), golden)
		}
	}
}

// TestDBTVersions: --dbt-version picks the form its header names; a
// version before 1.8, or not a version, is a usage error.
func TestDBTVersions(t *testing.T) {
	t.Parallel()
	for version, marker := range map[string]string{"1.8.10": "for dbt 1.8.0 to 1.9.4", "1.10.7": "for dbt 1.9.5 to 1.10.7", "1.11.14": "for dbt 1.10.8 and later"} {
		if out, _ := dbtOutput(t, nil, "--dbt-version", version); !strings.Contains(strings.SplitN(out, "\nversion:", 2)[0], marker) {
			t.Errorf("--dbt-version %s: the header does not say %q:\n%s", version, marker, out[:200])
		}
	}
	for _, bad := range []string{"1.7", "1.7.19", "0.21", "1", "latest", "1.x", "1.10.x", "1.10.8.1", "v1.10.8", "1.10.8b1"} {
		if code, _, errs := run(t, nil, "schema", "--format", "dbt", "--dbt-version", bad); code != ExitUsage || !strings.Contains(errs, "--dbt-version") {
			t.Errorf("--dbt-version %s: exit %d: %s", bad, code, errs)
		}
	}
}

// TestDBTFreshnessFollowsTheSchedule: warn after two of the sync schedule's
// longest intervals, error after six; from dbt 1.10.8 on every table, from
// the source's loaded_at_query, before on sync_runs alone; none when the
// schedule is off or never runs.
func TestDBTFreshnessFollowsTheSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schedule    string
		warn, error dbtPeriod
	}{
		{"*/15 * * * *", dbtPeriod{30, "minute"}, dbtPeriod{90, "minute"}},
		{"@hourly", dbtPeriod{2, "hour"}, dbtPeriod{6, "hour"}},
		{"@every 45m", dbtPeriod{90, "minute"}, dbtPeriod{270, "minute"}},
		{"0 3 * * *", dbtPeriod{2, "day"}, dbtPeriod{6, "day"}},
		{"0 9 * * 1-5", dbtPeriod{6, "day"}, dbtPeriod{18, "day"}},                           // Friday to Monday
		{"CRON_TZ=Europe/Paris 30 8,17 * * *", dbtPeriod{30, "hour"}, dbtPeriod{90, "hour"}}, // 17:30 to 8:30
		{"0 4 1 * *", dbtPeriod{62, "day"}, dbtPeriod{186, "day"}},                           // January to February
		{"off", dbtPeriod{}, dbtPeriod{}},
		{"0 0 30 2 *", dbtPeriod{}, dbtPeriod{}}, // February 30th: never
	}
	for _, tt := range tests {
		t.Run(tt.schedule, func(t *testing.T) {
			t.Parallel()
			for version := range dbtGoldens {
				_, p := dbtOutput(t, map[string]string{"USERSYNC_SYNC_SCHEDULE": tt.schedule}, dbtVersionArgs(version)...)
				checkDBTFreshness(t, tt.schedule+" "+version, p.Sources[0], version == "", tt.warn, tt.error)
			}
		})
	}
}

// checkDBTFreshness holds the freshness of src to the thresholds warn and
// error (none when warn is zero): on every table from the last successful
// sync when everywhere, else on sync_runs.finished_at alone.
func checkDBTFreshness(t *testing.T, what string, src dbtParsedSource, everywhere bool, warn, error dbtPeriod) {
	t.Helper()
	fresh := 0
	for _, tbl := range src.Tables {
		f, field, query := src.freshness(tbl)
		if f == nil {
			continue
		}
		fresh++
		if f.WarnAfter != warn || f.ErrorAfter != error {
			t.Errorf("%s: freshness of %s: warn %v, error %v; want %v, %v", what, tbl.Name, f.WarnAfter, f.ErrorAfter, warn, error)
		}
		var last bool
		if everywhere {
			last = field == "" && f.Filter == "" && strings.Contains(query, `."sync_runs" where `+dbt.FreshnessFilter)
		} else {
			last = tbl.Name == "sync_runs" && field == "finished_at" && f.Filter == dbt.FreshnessFilter && query == ""
		}
		if !last {
			t.Errorf("%s: freshness of %s: loaded_at_field %q, loaded_at_query %q, filter %q", what, tbl.Name, field, query, f.Filter)
		}
	}
	want := map[bool]int{true: len(src.Tables), false: 1}[everywhere]
	if warn.Count == 0 {
		want = 0
	}
	if fresh != want {
		t.Errorf("%s: %d tables with freshness, want %d", what, fresh, want)
	}
}

// TestDBTPersonalData: the personal columns of the users' tables carry the
// tag pii and meta personal_data saying how the configured policy stores
// them (under config from dbt 1.10.8); other columns carry neither.
func TestDBTPersonalData(t *testing.T) {
	t.Parallel()
	env := map[string]string{"USERSYNC_PII_HASH": "email,custom1", "USERSYNC_PII_DROP": "firstName,phoneNumber",
		"USERSYNC_PII_KEY": strings.Repeat("k", 40)}
	want := map[string]string{"email": "hashed", "custom1": "hashed", "first_name": "dropped", "phone_number": "dropped"}
	for _, a := range schema.User().Attributes {
		if _, ok := want[a.Column()]; !ok && a.Personal {
			want[a.Column()] = "clear"
		}
	}
	if want["last_name"] != "clear" || want["title"] != "" {
		t.Fatalf("the catalog's personal attributes changed: %v", want)
	}
	for version := range dbtGoldens {
		_, p := dbtOutput(t, env, dbtVersionArgs(version)...)
		for _, tbl := range p.Sources[0].Tables {
			for _, col := range tbl.Columns {
				meta, tags := col.Meta, col.Tags
				if meta == nil && tags == nil {
					meta, tags = col.Config.Meta, col.Config.Tags
				}
				if (col.Meta != nil || col.Tags != nil) == (version == "") && meta != nil {
					t.Errorf("--dbt-version %q: %s.%s has meta or tags at the wrong level", version, tbl.Name, col.Name)
				}
				how, personal := want[col.Name]
				if !dbt.UserTables[tbl.Name] || !personal {
					if meta != nil || tags != nil {
						t.Errorf("--dbt-version %q: %s.%s is marked %v %v", version, tbl.Name, col.Name, meta, tags)
					}
					continue
				}
				if meta["personal_data"] != how || !slices.Equal(tags, []string{"pii"}) {
					t.Errorf("--dbt-version %q: %s.%s: meta %v, tags %v; want personal_data %s, pii", version, tbl.Name, col.Name, meta, tags, how)
				}
			}
		}
	}
}

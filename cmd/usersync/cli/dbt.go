package cli

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usersync/usersync/jobs"
	"github.com/usersync/usersync/schema"
)

// The dbt sources.yml of `usersync schema --format dbt`: one source, named
// for the deployment's schema (two deployments' sources can share a dbt
// project), with every table and view analysts may read, described from the
// catalog, in the form of the dbt version asked for. Freshness is checked on sync_runs (the newest successful sync's
// finished_at), not on the tables' synced_at: a sync rewrites only the rows
// that changed, so synced_at stands still whenever nobody changes a user, and
// a freshness check on it would fail every quiet night.

type dbtFile struct {
	Version int         `yaml:"version"`
	Sources []dbtSource `yaml:"sources"`
}

type dbtSource struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Schema      string     `yaml:"schema"`
	Tables      []dbtTable `yaml:"tables"`
}

type dbtTable struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Before dbt 1.10, loaded_at_field sits beside the config; before 1.9,
	// freshness does too.
	LoadedAtField string        `yaml:"loaded_at_field,omitempty"`
	Freshness     *dbtFreshness `yaml:"freshness,omitempty"`
	Config        *dbtTableConf `yaml:"config,omitempty"`
	Columns       []dbtColumn   `yaml:"columns"`
}

// dbtTableConf is a source table's config: freshness from dbt 1.9,
// loaded_at_field from 1.10.
type dbtTableConf struct {
	Freshness     *dbtFreshness `yaml:"freshness,omitempty"`
	LoadedAtField string        `yaml:"loaded_at_field,omitempty"`
}

type dbtColumn struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	DataType    string `yaml:"data_type"`
	DataTests   []any  `yaml:"data_tests,omitempty"`
}

type dbtFreshness struct {
	WarnAfter  dbtPeriod `yaml:"warn_after"`
	ErrorAfter dbtPeriod `yaml:"error_after"`
	Filter     string    `yaml:"filter"`
}

type dbtPeriod struct {
	Count  int64  `yaml:"count"`
	Period string `yaml:"period"`
}

// dbtRelationship is a relationships test: its arguments (to, field) at the
// top level before dbt 1.10, under arguments from 1.10 on.
type dbtRelationship struct {
	To        string        `yaml:"to,omitempty"`
	Field     string        `yaml:"field,omitempty"`
	Arguments *dbtRelToward `yaml:"arguments,omitempty"`
	Config    *dbtConfig    `yaml:"config,omitempty"`
}

type dbtRelToward struct {
	To    string `yaml:"to"`
	Field string `yaml:"field"`
}

// dbtForm is the form of sources.yml a dbt version reads without a
// deprecation warning.
type dbtForm int

const (
	dbtForm18      dbtForm = iota // dbt 1.8: freshness, loaded_at_field and test arguments at the top level
	dbtForm19                     // dbt 1.9: freshness under config
	dbtFormCurrent                // dbt 1.10 and later: loaded_at_field under config too, test arguments under arguments
)

// parseDBTVersion reads --dbt-version: major.minor, 1.8 or later.
func parseDBTVersion(v string) (dbtForm, error) {
	major, minor, ok := strings.Cut(v, ".")
	maj, err1 := strconv.Atoi(major)
	mn, err2 := strconv.Atoi(minor)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, fmt.Errorf("--dbt-version %q: give dbt's major.minor version, such as 1.10", v)
	case maj > 1 || maj == 1 && mn >= 10:
		return dbtFormCurrent, nil
	case maj == 1 && mn == 9:
		return dbtForm19, nil
	case maj == 1 && mn == 8:
		return dbtForm18, nil
	}
	return 0, fmt.Errorf("--dbt-version %s: the sources.yml needs dbt 1.8 or later", v)
}

type dbtConfig struct {
	Severity string `yaml:"severity"`
}

// dbtFreshnessFilter picks the runs that keep the warehouse current: any
// successful run but a reconcile, which runs daily whatever the schedule.
const dbtFreshnessFilter = "status = 'succeeded' and kind <> 'reconcile'"

// dbtKeys are the single-column keys of the analysts' tables (their primary
// keys: TestSchemaDBTMatchesTheWarehouse holds them to the migrated schema)
// and views.
func dbtKeys() map[string]string {
	return map[string]string{"users": "id", "user_version_history": "version_id", "user_versions": "version_id",
		"teams": "id", "roles": "id", "profiles": "id", "sync_runs": "run_id", "sync_state": "stream",
		"quarantine": "quarantine_id", "users_current": "id"}
}

// dbtForeignKey is the table whose id a column holds, and whether a missing
// id fails the test (strict) or only warns.
type dbtForeignKey struct {
	table  string
	strict bool
}

// dbtForeignKeys maps "table.column" to its foreign key. usersync writes
// user_teams only for users it holds, and lists the teams before the users
// (only a team created during a sync is missing until the next); the to-one ids are
// the API's, which may name a resource it never lists (a creator deleted
// before the first sync), so those warn.
func dbtForeignKeys() map[string]dbtForeignKey {
	out := map[string]dbtForeignKey{"user_teams.user_id": {"users", true}, "user_teams.team_id": {"teams", true}}
	tables := map[string]string{}
	for _, r := range schema.Resources() {
		tables[r.Type] = r.Table
	}
	for _, r := range schema.Resources() {
		for _, rel := range r.ToOne() {
			if to, ok := tables[rel.RelatedType]; ok {
				out[r.Table+"."+rel.Column()] = dbtForeignKey{to, false}
			}
		}
	}
	return out
}

// dbtSources renders the dbt sources.yml of the warehouse in schemaName.
// syncSchedule (USERSYNC_SYNC_SCHEDULE) sets the freshness thresholds: warn
// after two of its longest intervals, error after six; off (or a schedule
// that never runs) sets none.
func dbtSources(schemaName, syncSchedule string, minEvery time.Duration, form dbtForm) (string, error) {
	sched, err := jobs.ParseSchedule("USERSYNC_SYNC_SCHEDULE", syncSchedule, minEvery)
	if err != nil {
		return "", err
	}
	src := dbtSource{Name: schemaName, Schema: schemaName,
		Description: "The sales-engagement platform's users, teams, roles and profiles, mirrored by usersync, with their history and the sync's own bookkeeping."}
	every := scheduleInterval(sched)
	for _, t := range schema.Tables() {
		if t.Analysts {
			src.Tables = append(src.Tables, dbtTableOf(t, every, schemaName, form))
		}
	}
	return encodeDBT(fmt.Sprintf("# dbt sources of the usersync warehouse, generated by usersync schema --format dbt\n"+
		"# (USERSYNC_SCHEMA=%s, USERSYNC_SYNC_SCHEDULE=%s); regenerate it after upgrading usersync.\n", schemaName, syncSchedule), src)
}

// encodeDBT renders a sources.yml of the one source src after the comment
// lines of header (each ending in a newline).
func encodeDBT(header string, src dbtSource) (string, error) {
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(dbtFile{Version: 2, Sources: []dbtSource{src}}); err != nil {
		return "", fmt.Errorf("encoding the dbt sources: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("encoding the dbt sources: %w", err)
	}
	return b.String(), nil
}

// dbtTableOf is t's entry; every is the sync schedule's interval (0: off),
// source the source's name.
func dbtTableOf(t schema.Table, every time.Duration, source string, form dbtForm) dbtTable {
	out := dbtTable{Name: t.Name, Description: t.Meaning}
	if t.View {
		out.Description = "(view) " + t.Meaning
	}
	if t.Name == "sync_runs" && every > 0 {
		fresh := &dbtFreshness{WarnAfter: dbtPeriodOf(2 * every), ErrorAfter: dbtPeriodOf(6 * every), Filter: dbtFreshnessFilter}
		switch form {
		case dbtForm18:
			out.Freshness, out.LoadedAtField = fresh, "finished_at"
		case dbtForm19:
			out.Config, out.LoadedAtField = &dbtTableConf{Freshness: fresh}, "finished_at"
		default:
			out.Config = &dbtTableConf{Freshness: fresh, LoadedAtField: "finished_at"}
		}
	}
	keys, fks := dbtKeys(), dbtForeignKeys()
	for _, c := range t.Columns {
		col := dbtColumn{Name: c.Name, Description: c.Meaning, DataType: c.Type}
		if keys[t.Name] == c.Name {
			col.DataTests = append(col.DataTests, "unique", "not_null")
		}
		if fk, ok := fks[t.Name+"."+c.Name]; ok {
			col.DataTests = append(col.DataTests, map[string]dbtRelationship{"relationships": dbtRelationshipTo(source, fk, form)})
		}
		out.Columns = append(out.Columns, col)
	}
	return out
}

// dbtRelationshipTo is the relationships test of a column holding fk's ids.
func dbtRelationshipTo(source string, fk dbtForeignKey, form dbtForm) dbtRelationship {
	to := "source('" + source + "', '" + fk.table + "')"
	rel := dbtRelationship{To: to, Field: "id"}
	if form == dbtFormCurrent {
		rel = dbtRelationship{Arguments: &dbtRelToward{To: to, Field: "id"}}
	}
	if !fk.strict {
		rel.Config = &dbtConfig{Severity: "warn"}
	}
	return rel
}

// scheduleInterval is the longest gap between two runs of s in the five
// weeks from a fixed Monday (so a weekday schedule's weekend counts, and the
// output does not depend on the day it is generated), or the first gap when
// s runs less often than that; 0 when s is nil (off) or never runs.
func scheduleInterval(s jobs.Schedule) time.Duration {
	if s == nil {
		return 0
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 35)
	prev := s.Next(start)
	if prev.IsZero() || s.Next(prev).IsZero() {
		return 0
	}
	longest := s.Next(prev).Sub(prev)
	for range 100_000 { // every minute for five weeks is 50,400 runs
		next := s.Next(prev)
		if !prev.Before(end) || next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// dbtPeriodOf is d in dbt's units: whole days or hours when it is one,
// minutes (rounded up) otherwise.
func dbtPeriodOf(d time.Duration) dbtPeriod {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return dbtPeriod{Count: int64(d / (24 * time.Hour)), Period: "day"}
	case d >= time.Hour && d%time.Hour == 0:
		return dbtPeriod{Count: int64(d / time.Hour), Period: "hour"}
	}
	return dbtPeriod{Count: int64((d + time.Minute - 1) / time.Minute), Period: "minute"}
}

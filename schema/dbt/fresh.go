package dbt

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Freshness of the sources.yml. Every table analysts read is as fresh as
// the warehouse: the end of the last successful sync (sync_runs.finished_at).
// A table's own synced_at would stand still on a quiet night, when no row
// changes, and a column written on every run would cost a write per row and
// run; the last successful sync tells a stale table (no sync succeeded
// lately) from a quiet one (syncs succeed, nothing changed). From dbt 1.10.8
// the source's config gives every table that time through loaded_at_query
// (dbt 1.10 and later); before, where a table can only name its own column
// (loaded_at_field), only sync_runs has freshness.

type dbtFreshness struct {
	WarnAfter  dbtPeriod `yaml:"warn_after"`
	ErrorAfter dbtPeriod `yaml:"error_after"`
	Filter     string    `yaml:"filter,omitempty"`
}

type dbtPeriod struct {
	Count  int64  `yaml:"count"`
	Period string `yaml:"period"`
}

// FreshnessFilter picks the runs that keep the warehouse current: any
// successful run but a reconcile, which runs daily whatever the schedule.
const FreshnessFilter = "status = 'succeeded' and kind <> 'reconcile'"

// dbtWarnAfter and dbtErrorAfter are the freshness thresholds in sync
// intervals: a sync missed (two intervals) warns, five in a row fail.
const (
	dbtWarnAfter  = 2
	dbtErrorAfter = 6
)

// dbtFreshnessOf is the freshness of a warehouse synced every every, or
// nil when it is not synced on a schedule.
func dbtFreshnessOf(every time.Duration, filter string) *dbtFreshness {
	if every <= 0 {
		return nil
	}
	return &dbtFreshness{WarnAfter: dbtPeriodOf(dbtWarnAfter * every), ErrorAfter: dbtPeriodOf(dbtErrorAfter * every), Filter: filter}
}

// dbtFreshen sets the freshness of src, the source of the warehouse in
// schemaName, in opt's form.
func dbtFreshen(src *dbtSource, schemaName string, opt Options) {
	if opt.Form == FormCurrent {
		if f := dbtFreshnessOf(opt.Every, ""); f != nil {
			src.Config = &dbtSourceConf{Freshness: f, LoadedAtQuery: dbtLastSyncQuery(schemaName)}
		}
		return
	}
	f := dbtFreshnessOf(opt.Every, FreshnessFilter)
	for i := range src.Tables {
		if src.Tables[i].Name != "sync_runs" || f == nil {
			continue
		}
		src.Tables[i].LoadedAtField = "finished_at"
		if opt.Form == FormConfig {
			src.Tables[i].Config = &dbtTableConf{Freshness: f}
		} else {
			src.Tables[i].Freshness = f
		}
	}
}

// dbtIdent quotes a lower-case identifier (USERSYNC_SCHEMA is one) for
// PostgreSQL and DuckDB alike.
func dbtIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// dbtLastSyncQuery is the end of the last successful sync of the warehouse
// in schemaName.
func dbtLastSyncQuery(schemaName string) string {
	return "select max(finished_at) from " + dbtIdent(schemaName) + `."sync_runs" where ` + FreshnessFilter
}

// AccountPace is an account of the union views and its sync schedule's
// longest interval.
type AccountPace struct {
	Name  string
	Every time.Duration
}

// dbtUnionSyncQuery is the freshness time of the union views in
// unionSchema: for each account in paces, the end of its last successful
// sync with its age scaled from its own interval to base, the shortest;
// the stalest of them. An age past dbtWarnAfter bases is then one past
// dbtWarnAfter of that account's intervals. An account never synced counts
// as synced in 1970.
func dbtUnionSyncQuery(unionSchema string, paces []AccountPace, base time.Duration) string {
	var rows []string
	for _, p := range paces {
		scale := strconv.FormatFloat(float64(base)/float64(p.Every), 'f', -1, 64)
		rows = append(rows, fmt.Sprintf("('%s', %s)", p.Name, scale))
	}
	return "select min(current_timestamp - (current_timestamp - coalesce(r.finished_at, timestamptz '1970-01-01 00:00:00+00')) * a.scale)" +
		" from (values " + strings.Join(rows, ", ") + ") as a (account, scale)" +
		" left join (select account, max(finished_at) as finished_at from " + dbtIdent(unionSchema) + `."sync_runs" where ` +
		FreshnessFilter + " group by account) as r on r.account = a.account"
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

package dbt

import (
	"strings"

	"github.com/usersync/usersync/schema"
)

// dbtTest is one of dbt's built-in generic tests (unique, not_null,
// relationships, accepted_values) with its arguments at the top level
// before dbt 1.10.8, under arguments from then on. column_name, a property
// of the test rather than an argument, stays at the top level.
type dbtTest struct {
	ColumnName  string       `yaml:"column_name,omitempty"`
	To          string       `yaml:"to,omitempty"`
	Field       string       `yaml:"field,omitempty"`
	Values      []string     `yaml:"values,omitempty"`
	Arguments   *dbtTestArgs `yaml:"arguments,omitempty"`
	Description string       `yaml:"description,omitempty"`
	Config      *dbtConfig   `yaml:"config,omitempty"`
}

type dbtTestArgs struct {
	To     string   `yaml:"to,omitempty"`
	Field  string   `yaml:"field,omitempty"`
	Values []string `yaml:"values,omitempty"`
}

type dbtConfig struct {
	Severity string `yaml:"severity"`
}

// dbtGeneric is the test name with args in form's grammar; description
// (dbt 1.9 and later) is left out of the oldest form, severity is "warn" or
// "" (error, dbt's default).
func dbtGeneric(form Form, name, columnName string, args dbtTestArgs, description, severity string) map[string]dbtTest {
	t := dbtTest{ColumnName: columnName, Description: description}
	switch {
	case form == FormCurrent && (args.To != "" || args.Values != nil):
		t.Arguments = &args
	case form != FormCurrent:
		t.To, t.Field, t.Values = args.To, args.Field, args.Values
	}
	if form == FormLegacy {
		t.Description = ""
	}
	if severity != "" {
		t.Config = &dbtConfig{Severity: severity}
	}
	return map[string]dbtTest{name: t}
}

// Keys are the single-column keys of the analysts' tables (their primary
// keys: TestSchemaDBTMatchesTheWarehouse holds them to the migrated schema)
// and views.
func Keys() map[string]string {
	out := map[string]string{"users": "id", "user_version_history": "version_id", "user_versions": "version_id",
		"sync_runs": "run_id", "sync_state": "stream", "quarantine": "quarantine_id", "users_current": "id"}
	for _, r := range schema.Dimensions() {
		out[r.Table] = "id"
	}
	return out
}

// dbtForeignKey is the table whose id a column holds, and why a missing id
// only warns ("" when it fails the test).
type dbtForeignKey struct {
	table string
	warns string
}

// dbtForeignKeys maps "table.column" to its foreign key. usersync writes
// user_teams only for users it holds; it lists the teams before the users,
// so a team created during a sync is missing until the next; the to-one ids
// are the API's, which may name a resource it never lists.
func dbtForeignKeys() map[string]dbtForeignKey {
	out := map[string]dbtForeignKey{"user_teams.user_id": {"users", ""},
		"user_teams.team_id": {"teams", "usersync lists the teams before the users, so a team created during a sync is missing from teams until the next sync: a miss warns, and one lasting past the next sync is worth a look"}}
	tables := map[string]string{}
	for _, r := range schema.Resources() {
		tables[r.Type] = r.Table
	}
	for _, r := range schema.Resources() {
		for _, rel := range r.ToOne() {
			if to, ok := tables[rel.RelatedType]; ok {
				out[r.Table+"."+rel.Column()] = dbtForeignKey{to, "the id is the API's, which may name a " + rel.RelatedType + " it never lists (one deleted before the first sync): a miss warns"}
			}
		}
	}
	return out
}

// dbtValueSet is a column's documented values, and why an other value only
// warns ("" when it fails the test).
type dbtValueSet struct {
	values []string
	warns  string
}

// dbtValueSets maps "table.column" to its documented values: the user
// attributes the API spec enumerates, in every users' table, and the
// values usersync writes itself.
func dbtValueSets() map[string]dbtValueSet {
	out := map[string]dbtValueSet{
		"sync_runs.kind":             {values: []string{"incremental", "full", "backfill", "reconcile"}},
		"sync_runs.status":           {values: []string{"running", "succeeded", "failed", "paused", "interrupted", "abandoned"}},
		"user_team_history.ended_by": {values: []string{"removed", "user_deleted", "team_deleted"}},
	}
	for _, a := range schema.User().Attributes {
		if len(a.Enum) == 0 {
			continue
		}
		for table := range UserTables {
			out[table+"."+a.Column()] = dbtValueSet{values: a.Enum,
				warns: "the API spec lists these values; usersync stores any other the API sends as sent, so a new one warns"}
		}
	}
	return out
}

// dbtColumnTests are the relationships and accepted_values tests of a
// column of table in the source named source. In the oldest form, which
// has no test descriptions, why a test only warns goes to the column's
// description.
func dbtColumnTests(table string, col *dbtColumn, source string, form Form) []any {
	var out []any
	note := func(why string) string {
		if form == FormLegacy && why != "" {
			col.Description += " (its test only warns: " + why + ")"
			return ""
		}
		return why
	}
	if fk, ok := dbtForeignKeys()[table+"."+col.Name]; ok {
		to := "source('" + source + "', '" + fk.table + "')"
		out = append(out, dbtGeneric(form, "relationships", "", dbtTestArgs{To: to, Field: "id"}, note(fk.warns), severityOf(fk.warns)))
	}
	if vs, ok := dbtValueSets()[table+"."+col.Name]; ok {
		out = append(out, dbtGeneric(form, "accepted_values", "", dbtTestArgs{Values: vs.values}, note(vs.warns), severityOf(vs.warns)))
	}
	return out
}

// severityOf is the severity of a test that warns for the reason why, or
// fails when why is "".
func severityOf(why string) string {
	if why == "" {
		return ""
	}
	return "warn"
}

// dbtText is a column as text in every SQL dbt runs on (PostgreSQL, DuckDB).
func dbtText(col string) string { return "cast(" + col + " as varchar)" }

// dbtOpenVersions maps the history tables and views to the id (or ids)
// each open version (valid_to null) is of: at most one per id.
func dbtOpenVersions() map[string][]string {
	return map[string][]string{"user_version_history": {"user_id"}, "user_versions": {"user_id"},
		"team_history": {"team_id"}, "team_versions": {"team_id"}, "role_history": {"role_id"}, "role_versions": {"role_id"},
		"profile_history": {"profile_id"}, "profile_versions": {"profile_id"}, "user_team_versions": {"user_id", "team_id"}}
}

// dbtTableTests are t's tests of more than one column, with dbt's unique
// on an expression: the composite key of user_teams, and at most one open
// version per id in the histories.
func dbtTableTests(t schema.Table, form Form) []any {
	var out []any
	if t.Name == "user_teams" {
		out = append(out, dbtGeneric(form, "unique", dbtConcat("user_id", "team_id"), dbtTestArgs{},
			"a user is in a team once: (user_id, team_id) is the key", ""))
	}
	if ids, ok := dbtOpenVersions()[t.Name]; ok {
		out = append(out, dbtGeneric(form, "unique", "case when valid_to is null then "+dbtConcat(ids...)+" end", dbtTestArgs{},
			"at most one open version (valid_to null) per "+dbtJoin(ids), ""))
	}
	return out
}

// dbtConcat is the text key of cols: the one column as is, several joined
// by '|'.
func dbtConcat(cols ...string) string {
	if len(cols) == 1 {
		return cols[0]
	}
	texts := make([]string, len(cols))
	for i, c := range cols {
		texts[i] = dbtText(c)
	}
	return strings.Join(texts, " || '|' || ")
}

// dbtJoin names cols in a description: the one column, or several in
// parentheses.
func dbtJoin(cols []string) string {
	if len(cols) == 1 {
		return cols[0]
	}
	return "(" + strings.Join(cols, ", ") + ")"
}

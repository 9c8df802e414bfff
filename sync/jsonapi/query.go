package jsonapi

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimeLayout is the layout of timestamps in filters: UTC with exactly
// millisecond precision, the finest the API accepts.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime formats t for a filter: UTC, truncated (never rounded up) to the
// millisecond, as in "2026-11-22T10:15:00.123Z".
func FormatTime(t time.Time) string {
	return t.UTC().Truncate(time.Millisecond).Format(TimeLayout)
}

// Query describes the first request of a collection: filters, sort, include,
// sparse fields, page size and flags. It is an immutable value: every method
// returns a new Query, so a base query can be shared and extended. Invalid or
// deprecated uses are recorded and reported by Encode (and so by the first
// Pages.Next). The zero Query is ready to use.
type Query struct {
	params []queryParam
	err    error
}

type queryParam struct{ key, value string }

// FilterValue is the value of a filter: build it with Value, Values, IDs,
// Time, Range or StringRange.
type FilterValue struct {
	text string
	err  error
}

// Value is a filter value sent as is.
func Value(s string) FilterValue { return FilterValue{text: s} }

// Values is a comma-separated list of values. A value holding a comma is
// refused, since the API would split it.
func Values(vs ...string) FilterValue {
	if len(vs) == 0 {
		return FilterValue{err: &QueryError{Param: "filter", Reason: "empty value list"}}
	}
	for _, v := range vs {
		if strings.Contains(v, ",") {
			return FilterValue{err: &QueryError{Param: "filter", Reason: "value " + quoteShort(v) + " holds a comma"}}
		}
	}
	return FilterValue{text: strings.Join(vs, ",")}
}

// IDs is a comma-separated id list, as in filter[id]=1,2,3.
func IDs(ids ...int64) FilterValue {
	if len(ids) == 0 {
		return FilterValue{err: &QueryError{Param: "filter", Reason: "empty id list"}}
	}
	return FilterValue{text: joinIDs(ids)}
}

// Time is a timestamp value, formatted with FormatTime.
func Time(t time.Time) FilterValue { return FilterValue{text: FormatTime(t)} }

// Range is an inclusive timestamp range "from..to"; a zero time is an open
// end, sent as "inf" (so Range(time.Time{}, time.Time{}) is "inf..inf").
func Range(from, to time.Time) FilterValue {
	if !from.IsZero() && !to.IsZero() && from.After(to) {
		return FilterValue{err: &QueryError{Param: "filter", Reason: "range starts after it ends"}}
	}
	return FilterValue{text: timeOrInf(from) + ".." + timeOrInf(to)}
}

// StringRange is a range "from..to" of other values (ids, names); an empty
// end is open and sent as "inf".
func StringRange(from, to string) FilterValue {
	if from == "" {
		from = "inf"
	}
	if to == "" {
		to = "inf"
	}
	return FilterValue{text: from + ".." + to}
}

func timeOrInf(t time.Time) string {
	if t.IsZero() {
		return "inf"
	}
	return FormatTime(t)
}

// Filter adds filter[attr]=value for an attribute of the resource itself
// ("id", "updatedAt", "email"...). It replaces an earlier filter on attr. The
// forms "rel.id" and "rel[id]" are accepted as FilterRelationship; any other
// relationship attribute ("role.name", "role[name]") is a deprecated form
// (spec §9.3) and is refused.
func (q Query) Filter(attr string, v FilterValue) Query {
	if v.err != nil {
		return q.fail(v.err)
	}
	rel, sub, nested := splitRelationAttr(attr)
	switch {
	case attr == "" || (nested && (rel == "" || sub == "")):
		return q.fail(&QueryError{Param: "filter[" + attr + "]", Reason: "empty attribute name"})
	case nested && sub == "id":
		return q.set("filter["+rel+"][id]", v.text)
	case nested:
		return q.fail(&QueryError{
			Param:      "filter[" + rel + "][" + sub + "]",
			Deprecated: true,
			Reason: "filtering by a relationship attribute was removed by the API (spec §9.3); " +
				"first query the related resources with Fields(<type>) to get their ids, then use " +
				"FilterRelationship(" + strconv.Quote(rel) + ", ids...) (filter[" + rel + "][id]=<ids>)",
		})
	}
	return q.set("filter["+attr+"]", v.text)
}

// FilterRelationship adds filter[rel][id]=1,2,3, the one relationship filter
// the API keeps (users: profile, role, teams).
func (q Query) FilterRelationship(rel string, ids ...int64) Query {
	if rel == "" || strings.ContainsAny(rel, ".[]") {
		return q.fail(&QueryError{Param: "filter[" + rel + "][id]", Reason: "invalid relationship name"})
	}
	return q.Filter(rel+".id", IDs(ids...))
}

// Sort appends sort keys: "attr" ascending, "-attr" descending; several
// keys are sent comma-separated in the order given. Sorting by a
// relationship attribute ("role.name") is a deprecated form (spec §9.3) and
// is refused.
func (q Query) Sort(keys ...string) Query {
	var out []string
	for _, key := range keys {
		for _, k := range strings.Split(key, ",") {
			name := strings.TrimPrefix(strings.TrimSpace(k), "-")
			switch {
			case name == "":
				return q.fail(&QueryError{Param: "sort", Reason: "empty sort key"})
			case strings.Contains(name, "."):
				rel, _, _ := strings.Cut(name, ".")
				return q.fail(&QueryError{
					Param:      "sort",
					Deprecated: true,
					Reason: "sorting by a relationship attribute (sort=" + name + ") was removed by the API (spec §9.3); " +
						"use Include(" + strconv.Quote(rel) + ") with Fields(<type>, <attribute>) and sort locally",
				})
			}
			out = append(out, strings.TrimSpace(k))
		}
	}
	return q.appendList("sort", out)
}

// Include appends relationship names to include= (related resources then
// arrive in Document.Included).
func (q Query) Include(rels ...string) Query {
	for _, r := range rels {
		if r == "" || strings.Contains(r, ",") {
			return q.fail(&QueryError{Param: "include", Reason: "invalid relationship name " + quoteShort(r)})
		}
	}
	return q.appendList("include", rels)
}

// Fields sets the sparse fieldset fields[typ]=a,b. With no attributes it
// sends the empty value fields[typ]=, which asks for no attributes at all.
func (q Query) Fields(typ string, attrs ...string) Query {
	if typ == "" {
		return q.fail(&QueryError{Param: "fields[]", Reason: "empty type"})
	}
	return q.set("fields["+typ+"]", strings.Join(attrs, ","))
}

// PageSize sets page[size] for the first request. The server may send fewer
// per page; the client never relies on it.
func (q Query) PageSize(n int) Query {
	if n < 1 {
		return q.fail(&QueryError{Param: "page[size]", Reason: "must be at least 1"})
	}
	return q.set("page[size]", strconv.Itoa(n))
}

// Count sets count=true or count=false. Without it every collection request
// sends count=false, so the server skips the costly count.
func (q Query) Count(on bool) Query { return q.set("count", strconv.FormatBool(on)) }

// ProvideDataConnections adds provideDataConnections=true (meta.dataConnections on users).
func (q Query) ProvideDataConnections() Query { return q.set("provideDataConnections", "true") }

// ProvideAuthorizationMeta adds provideAuthorizationMeta=true (meta.canWrite).
func (q Query) ProvideAuthorizationMeta() Query { return q.set("provideAuthorizationMeta", "true") }

// Err returns the first invalid use recorded in q, a *QueryError, or nil.
func (q Query) Err() error { return q.err }

// Encode returns the query string, with keys sorted and brackets
// percent-encoded as url.Values.Encode does (a Go server's r.URL.Query()
// decodes it back), and count=false unless Count was called.
func (q Query) Encode() (string, error) {
	if q.err != nil {
		return "", q.err
	}
	v := make(url.Values, len(q.params)+1)
	v.Set("count", "false")
	for _, p := range q.params {
		v.Set(p.key, p.value)
	}
	return v.Encode(), nil
}

// set returns a copy of q with key set to value, replacing an earlier value.
func (q Query) set(key, value string) Query {
	params := slices.Clone(q.params)
	for i := range params {
		if params[i].key == key {
			params[i].value = value
			q.params = params
			return q
		}
	}
	q.params = append(params, queryParam{key, value})
	return q
}

// appendList appends items to the comma-separated list under key.
func (q Query) appendList(key string, items []string) Query {
	if q.err != nil || len(items) == 0 {
		return q
	}
	joined := strings.Join(items, ",")
	for _, p := range q.params {
		if p.key == key && p.value != "" {
			joined = p.value + "," + joined
		}
	}
	return q.set(key, joined)
}

// fail records the first error of q.
func (q Query) fail(err error) Query {
	if q.err == nil {
		q.err = err
	}
	return q
}

// splitRelationAttr splits "rel.attr", "rel[attr]" and "rel][attr" into the
// relationship and its attribute; nested is false for a plain attribute.
func splitRelationAttr(attr string) (rel, sub string, nested bool) {
	i := strings.IndexAny(attr, ".[")
	if i < 0 {
		return attr, "", strings.Contains(attr, "]")
	}
	rel = strings.TrimSuffix(attr[:i], "]")
	sub = strings.Trim(attr[i+1:], "[]")
	return rel, sub, true
}

func joinIDs(ids []int64) string {
	b := make([]byte, 0, len(ids)*8)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

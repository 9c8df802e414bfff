package apisim

import (
	"slices"
	"strconv"
	"strings"
)

// parseFilter parses one filter[...] parameter (spec §4.2): an attribute
// value, list or range, the new [gte]/[lte] syntax, or filter[<rel>][id].
func (q *query) parseFilter(param string, segs []string, v string, newSyntax bool) *apiError {
	name := segs[0]
	if f := q.t.field(name); f != nil {
		op := ""
		switch {
		case len(segs) == 2 && segs[1] == "":
			// filter[attr][]=a,b is the new syntax's list form; it reads like filter[attr]=a,b.
		case len(segs) == 2:
			op = segs[1]
			if !newSyntax {
				return badParam(param, "filterParameter.invalid",
					param+" needs newFilterSyntax=true; without it use filter["+name+"]=<from>..<to>")
			}
		case len(segs) > 2:
			return badParam(param, "filterParameter.invalid", "unknown filter "+param)
		}
		c, err := parseAttrCond(param, f, op, v, newSyntax)
		if err != nil {
			return err
		}
		q.conds = append(q.conds, c)
		return nil
	}
	if r := q.t.rel(name); r != nil {
		if !r.filterable {
			return badParam(param, "filterParameter.invalid",
				"relationship "+name+" cannot be used as a filter")
		}
		if len(segs) != 2 || segs[1] != "id" {
			sub := "<attribute>"
			if len(segs) >= 2 {
				sub = segs[1]
			}
			return badParam(param, "filterParameter.deprecated",
				"filtering by a relationship's attribute (filter["+name+"]["+sub+"]) is no longer supported: "+
					"query /api/v2/"+r.relType+"s with fields["+r.relType+"]= to get ids, then use filter["+name+"][id]=<ids>")
		}
		ids, ok := parseIDList(v)
		if !ok {
			return badParam(param, "filterParameter.invalid", param+" must be a comma-separated list of ids")
		}
		q.conds = append(q.conds, cond{rel: r, ids: ids})
		return nil
	}
	if q.t.hasAttr(name) {
		return badParam(param, "filterParameter.invalid", "attribute "+name+" cannot be used as a filter")
	}
	return badParam(param, "filterParameter.invalid", q.t.name+" has no attribute or relationship "+strconv.Quote(name))
}

// parseIDList parses "1,2,3" into sorted, distinct ids.
func parseIDList(v string) ([]uint32, bool) {
	var ids []uint32
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil {
			return nil, false
		}
		ids = append(ids, uint32(n))
	}
	slices.Sort(ids)
	return slices.Compact(ids), true
}

// parseAttrCond parses the value of an attribute filter.
func parseAttrCond(param string, f *fieldDef, op, v string, newSyntax bool) (cond, *apiError) {
	c := cond{f: f}
	invalid := func() *apiError {
		if f.kind == fkTime {
			return badParam(param, "filterParameter.invalidDatetimeFormat",
				param+" must be a timestamp like 2024-05-01T12:34:56.789Z (at most millisecond precision)")
		}
		return badParam(param, "filterParameter.invalid", param+" has an invalid value for "+f.name)
	}
	// bound parses one end of a range; nil means open ("inf", "neginf" or empty).
	bound := func(s string) (*key, bool) {
		if s == "" || s == "inf" || s == "neginf" || s == "-inf" {
			return nil, true
		}
		k, ok := parseKey(f, s)
		return &k, ok
	}
	switch op {
	case "":
		if lo, hi, ok := strings.Cut(v, ".."); ok {
			if newSyntax && f.kind == fkTime {
				return c, badParam(param, "filterParameter.invalidDatetimeFormat",
					"ranges (from..to) cannot be used with newFilterSyntax=true: use filter["+f.name+"][gte] and filter["+f.name+"][lte]")
			}
			var okLo, okHi bool
			c.lo, okLo = bound(lo)
			c.hi, okHi = bound(hi)
			if !okLo || !okHi {
				return c, invalid()
			}
			return c, nil
		}
		for _, part := range strings.Split(v, ",") {
			k, ok := parseKey(f, part)
			if !ok {
				return c, invalid()
			}
			c.vals = append(c.vals, k)
		}
		return c, nil
	case "gte", "gt", "lte", "lt":
		k, ok := bound(v)
		if !ok {
			return c, invalid()
		}
		if op[0] == 'g' {
			c.lo, c.loExcl = k, op == "gt"
		} else {
			c.hi, c.hiExcl = k, op == "lt"
		}
		return c, nil
	}
	return c, badParam(param, "filterParameter.invalid", "unknown filter operator "+strconv.Quote(op))
}

// parseKey parses a filter value (or a cursor value) of field f.
func parseKey(f *fieldDef, s string) (key, bool) {
	k := key{kind: f.kind}
	switch f.kind {
	case fkInt:
		n, err := strconv.ParseInt(s, 10, 64)
		k.n = n
		return k, err == nil
	case fkTime:
		ms, ok := parseTimestamp(s)
		k.n = ms
		return k, ok
	case fkBool:
		switch s {
		case "true":
			k.n = 1
		case "false":
		default:
			return k, false
		}
		return k, true
	}
	k.s = s
	return k, true
}

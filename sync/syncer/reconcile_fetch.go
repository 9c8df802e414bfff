package syncer

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/jsondoc"
	"github.com/usersync/usersync/sync/warehouse/reconcile"
)

// reconcilePageSize is the page[size] of a reconcile's requests (the API's
// maximum) and the largest filter[id] batch, so a batch is one page.
const reconcilePageSize = 1000

// scanQuery lists every user with its updatedAt and its linkage to teams,
// roles and profiles only (schema.DimensionLinks), in id order: the id order does not
// change under concurrent updates, unlike updatedAt's. The linkage costs no
// request: it shows the users the API links otherwise than the warehouse
// does without moving their updatedAt (a team, role or profile deleted or
// restored), which are then fetched by id with the stale ones. The teams'
// ids come with include=teams (and an empty fields[team]), as in every users
// request, unless the API refused it: an API may send users' teams without
// data otherwise.
func (s *Syncer) scanQuery() jsonapi.Query {
	fields := []string{"updatedAt"}
	for _, rel := range schema.DimensionLinks() {
		fields = append(fields, rel.Name)
	}
	return s.withTeams(jsonapi.Query{}.Fields("user", fields...)).Sort("id").PageSize(reconcilePageSize)
}

// fetchQuery fetches users by id, with every attribute and relationship, the
// metadata every users request asks for (see UserQuery) and the teams' ids
// unless the API refused include=teams.
func (s *Syncer) fetchQuery(ids []int64) jsonapi.Query {
	return s.withTeams(s.UserQuery()).Filter("id", jsonapi.IDs(ids...)).PageSize(reconcilePageSize)
}

// scannedUsers appends the id, updatedAt and linkage to teams, roles and
// profiles of each resource to dst, counting in unreadable the resources
// without a usable id.
func scannedUsers(dst []reconcile.ScannedUser, data []jsondoc.Resource, unreadable *int64) []reconcile.ScannedUser {
	rels := schema.DimensionLinks()
	for i := range data {
		if !data[i].ID.Valid() {
			*unreadable++
			continue
		}
		u := reconcile.ScannedUser{ID: int64(data[i].ID), Links: scannedLinks(&data[i], rels)}
		if v := gjson.GetBytes(data[i].Attributes, "updatedAt"); v.Type == gjson.String {
			u.UpdatedText = v.Str
			if t, err := time.Parse(time.RFC3339Nano, v.Str); err == nil {
				t = t.UTC()
				u.UpdatedAt = &t
			}
		}
		dst = append(dst, u)
	}
	return dst
}

// scannedLinks returns the resource's linkage to teams, roles and profiles
// as reconcile.ScannedUser.Links holds it: for each relationship of rels
// (schema.DimensionLinks()) sent with data, the valid ids of the catalog's
// type (a null to-one: none); nil for one sent without data. Nil when none
// was sent with data.
func scannedLinks(res *jsondoc.Resource, rels []schema.Relationship) [][]int64 {
	var out [][]int64
	for i, rel := range rels {
		r, ok := res.Relationships[rel.Name]
		if !ok || r.Data.Shape == jsondoc.ShapeAbsent {
			continue
		}
		ids := make([]int64, 0, len(r.Data.IDs))
		for _, id := range r.Data.IDs {
			if id.Type == rel.RelatedType && id.ID.Valid() {
				ids = append(ids, int64(id.ID))
			}
		}
		if out == nil {
			out = make([][]int64, len(rels))
		}
		out[i] = ids
	}
	return out
}

// fetchQueued fetches the queued ids by id, in batches read from the
// warehouse in id order and split to fit the request-line budget, and loads
// each page through the sync's page transaction (history, linkage,
// quarantine, checkpoint).
func (r *reconciler) fetchQueued(ctx context.Context, work *reconcile.Reconciliation) error {
	after := int64(math.MinInt64)
	for {
		ids, err := work.FetchBatch(ctx, after, reconcilePageSize)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		after = ids[len(ids)-1]
		batches, err := r.s.idBatches(ids, r.req.MaxRequestLine)
		if err != nil {
			return err
		}
		for _, b := range batches {
			if err := r.fetchIDs(ctx, work, b); err != nil {
				return err
			}
		}
	}
}

// fetchIDs fetches one batch and loads it. The ids returned join the scan,
// so a live user the scan missed is not marked deleted.
func (r *reconciler) fetchIDs(ctx context.Context, work *reconcile.Reconciliation, ids []int64) error {
	asked := make(map[int64]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	pages := r.s.client.Collection("users", r.s.fetchQuery(ids))
	var seen []reconcile.ScannedUser
	var unreadable int64 // quarantined by the users load; counted as not returned
	for {
		page, err := pages.Next(ctx)
		if err != nil {
			return fmt.Errorf("fetching %d users from id %d: %w", len(ids), ids[0], err)
		}
		if page == nil {
			break
		}
		r.sum.FetchPages++
		rows, bad, _ := r.s.normalizeAll("user", page.Data)
		r.fillRequestCounters()
		if _, err := r.s.users.Write(ctx, rows, bad, &r.cp); err != nil {
			return fmt.Errorf("writing fetched page %d: %w", r.cp.Progress.Pages+1, err)
		}
		seen = scannedUsers(seen[:0], page.Data, &unreadable)
		if err := work.AddScanned(ctx, seen); err != nil {
			return err
		}
		for _, u := range seen {
			delete(asked, u.ID)
		}
		r.progress(len(page.Data))
	}
	r.sum.NotReturned += int64(len(asked))
	return nil
}

// idBatches splits ids into filter[id] batches of at most
// reconcilePageSize ids whose request line, as the client encodes it, stays
// within maxLine bytes.
func (s *Syncer) idBatches(ids []int64, maxLine int) ([][]int64, error) {
	var out [][]int64
	for len(ids) > 0 {
		n, err := s.fitIDs(ids, maxLine)
		if err != nil {
			return nil, err
		}
		out = append(out, ids[:n:n])
		ids = ids[n:]
	}
	return out, nil
}

// fitIDs returns how many of the first ids fit in one request line. It
// estimates from the encoded length of one id (each further id adds its
// digits and an encoded comma), then checks the estimate against the URL
// actually encoded, shrinking the batch until it fits.
func (s *Syncer) fitIDs(ids []int64, maxLine int) (int, error) {
	line, err := s.fetchRequestLine(ids[:1])
	if err != nil {
		return 0, err
	}
	if line > maxLine {
		return 0, fmt.Errorf("fetching user %d by id: the request line alone is %d bytes, over the %d allowed", ids[0], line, maxLine)
	}
	comma := len(url.QueryEscape(","))
	n, est := 1, line
	for n < len(ids) && n < reconcilePageSize {
		add := len(url.QueryEscape(strconv.FormatInt(ids[n], 10))) + comma
		if est+add > maxLine {
			break
		}
		est += add
		n++
	}
	for n > 1 {
		if line, err = s.fetchRequestLine(ids[:n]); err != nil {
			return 0, err
		}
		if line <= maxLine {
			break
		}
		n-- // the estimate was short: the encoding changed
	}
	return n, nil
}

// fetchRequestLine is the length of "GET <path>?<query> HTTP/1.1" for a
// fetch of ids, from the URL the client would send.
func (s *Syncer) fetchRequestLine(ids []int64) (int, error) {
	raw, err := s.client.CollectionURL("users", s.fetchQuery(ids))
	if err != nil {
		return 0, fmt.Errorf("building a fetch by id: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return 0, fmt.Errorf("building a fetch by id: %w", err)
	}
	return len("GET ") + len(u.RequestURI()) + len(" HTTP/1.1"), nil
}

// tableOf returns the table of a catalog type ("team" → "teams").
func tableOf(typ string) string {
	for _, res := range schema.Resources() {
		if res.Type == typ {
			return res.Table
		}
	}
	return typ
}

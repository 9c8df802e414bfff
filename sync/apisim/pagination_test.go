package apisim

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCursorWalkCoversEverything walks each collection under several sorts
// and finds every resource exactly once.
func TestCursorWalkCoversEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 777, IdenticalTimestamps: 100})
	want := map[string][]int64{
		"users": e.sim.UserIDs(), "teams": truthIDs(e.sim.Resources("team")),
		"roles": truthIDs(e.sim.Resources("role")), "profiles": truthIDs(e.sim.Resources("profile")),
	}
	cases := []struct{ path, sort, size string }{
		{"users", "", "50"}, {"users", "updatedAt", "64"}, {"users", "-updatedAt", "33"},
		{"users", "email", "100"}, {"users", "-createdAt", "1000"}, {"users", "-id", "71"},
		{"teams", "", "4"}, {"roles", "-name", "5"}, {"profiles", "updatedAt", "1"},
	}
	for _, c := range cases {
		t.Run(c.path+" sort="+c.sort, func(t *testing.T) {
			t.Parallel()
			kv := []string{"page[size]", c.size}
			if c.sort != "" {
				kv = append(kv, "sort", c.sort)
			}
			got, _ := e.walk(q("/api/v2/"+c.path, kv...), nil)
			if g := sortedIDs(t, got); !slices.Equal(g, want[c.path]) {
				t.Errorf("walk found %d, want %d (no duplicates, no gaps)", len(g), len(want[c.path]))
			}
		})
	}
}

// TestKeysetWalkUnderMutation mutates the dataset between pages: with
// keyset cursors no unchanged user is skipped or repeated, and with
// sort=updatedAt every user alive at the end is seen.
func TestKeysetWalkUnderMutation(t *testing.T) {
	t.Parallel()
	for _, sort := range []string{"updatedAt", "", "-id"} {
		t.Run("sort="+sort, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{Users: 600})
			initial := e.sim.UserIDs()
			changed := map[int64]bool{}
			kv := []string{"page[size]", "40"}
			if sort != "" {
				kv = append(kv, "sort", sort)
			}
			got, pages := e.walk(q("/api/v2/users", kv...), func(page int) {
				e.clock.Advance(time.Second)
				for _, id := range e.sim.UpdateUsers(15) {
					changed[id] = true
				}
				for _, id := range e.sim.CreateUsers(2) {
					changed[id] = true
				}
				victim := int64(page*37%600 + 1)
				if err := e.sim.DeleteUser(victim); err != nil {
					t.Fatal(err)
				}
				changed[victim] = true
			})
			if pages < 10 {
				t.Fatalf("only %d pages", pages)
			}
			seen := map[int64]int{}
			for _, id := range ids(t, got) {
				seen[id]++
			}
			for _, id := range initial {
				if !changed[id] && seen[id] != 1 {
					t.Errorf("unchanged user %d seen %d times", id, seen[id])
				}
			}
			if sort == "updatedAt" {
				for _, id := range e.sim.UserIDs() {
					if seen[id] == 0 {
						t.Errorf("user %d, alive at the end, never seen", id)
					}
				}
			}
		})
	}
}

// TestOffsetWalkSkipsUnderMutation shows what the deprecated offset mode
// does when rows move during a walk: unchanged users are skipped.
func TestOffsetWalkSkipsUnderMutation(t *testing.T) {
	t.Parallel()
	run := func(offset bool) (skipped int, nextLink string) {
		e := newEnv(t, Options{Users: 400, Knobs: Knobs{OffsetPagination: offset}})
		first := e.getDoc(q("/api/v2/users", "sort", "updatedAt", "page[size]", "40"), http.StatusOK)
		nextLink = first.Links.Next
		changed := map[int64]bool{}
		got, _ := e.walk(q("/api/v2/users", "sort", "updatedAt", "page[size]", "40"), func(page int) {
			if page != 1 {
				return
			}
			// The first page's users move to the end of the updatedAt order.
			e.clock.Advance(time.Minute)
			for _, r := range first.list(t)[:10] {
				if err := e.sim.UpdateUser(r.id(t)); err != nil {
					t.Fatal(err)
				}
				changed[r.id(t)] = true
			}
		})
		seen := map[int64]bool{}
		for _, id := range ids(t, got) {
			seen[id] = true
		}
		for _, id := range e.sim.UserIDs() {
			if !changed[id] && !seen[id] {
				skipped++
			}
		}
		return skipped, nextLink
	}
	skipped, link := run(true)
	if u, _ := url.Parse(link); u.Query().Get("page[offset]") != "40" || u.Query().Get("page[after]") != "" {
		t.Errorf("offset mode links.next = %q", link)
	}
	if skipped != 10 {
		t.Errorf("offset walk skipped %d unchanged users, want 10", skipped)
	}
	if skipped, _ := run(false); skipped != 0 {
		t.Errorf("keyset walk skipped %d unchanged users", skipped)
	}
}

func TestOffsetParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 100, Knobs: Knobs{MaxOffset: 60}})
	d := e.getDoc(q("/api/v2/users", "page[offset]", "20", "page[limit]", "10"), http.StatusOK)
	if got := ids(t, d.list(t)); got[0] != 21 || len(got) != 10 {
		t.Errorf("page[offset]=20&page[limit]=10 gave %v", got)
	}
	if u, _ := url.Parse(d.Links.Next); u.Query().Get("page[offset]") != "30" {
		t.Errorf("next = %q", d.Links.Next)
	}
	e.getDoc(q("/api/v2/users", "page[offset]", "61"), http.StatusBadRequest)
}

func TestOutOfOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300, Knobs: Knobs{OutOfOrder: true}})
	unsorted := 0
	var all []resource
	for path := q("/api/v2/users", "sort", "updatedAt", "page[size]", "25"); path != ""; {
		d := e.getDoc(path, http.StatusOK)
		page := d.list(t)
		all = append(all, page...)
		if !slices.IsSortedFunc(page, func(a, b resource) int {
			return strings.Compare(string(a.Attributes["updatedAt"]), string(b.Attributes["updatedAt"]))
		}) {
			unsorted++
		}
		path = d.Links.Next
	}
	if unsorted == 0 {
		t.Error("no page came out of order")
	}
	if !slices.Equal(sortedIDs(t, all), e.sim.UserIDs()) {
		t.Error("shuffled pages lost or repeated users")
	}
}

// TestLateVisibility checks that changes reach filtered and sorted queries
// only after a per-change delay, while reads by id see them at once.
func TestLateVisibility(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300, Knobs: Knobs{LateVisibility: 10 * time.Second}})
	e.clock.Advance(time.Hour)
	changedAt := e.clock.Now()
	e.sim.UpdateUsers(40)
	recent := func() int {
		got, _ := e.walk(q("/api/v2/users", "filter[updatedAt]", ms(changedAt)+"..inf", "page[size]", "100"), nil)
		return len(got)
	}
	if n := recent(); n > 10 {
		t.Errorf("%d of 40 changes visible at once", n)
	}
	e.clock.Advance(5 * time.Second)
	if n := recent(); n == 0 || n == 40 {
		t.Errorf("%d of 40 changes visible after half the lag: want some", n)
	}
	e.clock.Advance(5 * time.Second)
	if n := recent(); n != 40 {
		t.Errorf("%d of 40 changes visible after the lag", n)
	}
	// Reads by id and the unfiltered default walk are not delayed.
	e2 := newEnv(t, Options{Users: 50, Knobs: Knobs{LateVisibility: time.Hour}})
	id := e2.sim.UpdateUsers(1)[0]
	truth, _ := e2.sim.User(id)
	var u resource
	mustUnmarshal(t, e2.getDoc("/api/v2/users/"+itoa(id), http.StatusOK).Data, &u)
	if attrString(t, u, "updatedAt") != ms(updatedAt(truth)) {
		t.Error("GET by id does not show the change")
	}
	if all, _ := e2.walk("/api/v2/users", nil); len(all) != 50 {
		t.Errorf("default walk: %d users", len(all))
	}
	sorted, _ := e2.walk(q("/api/v2/users", "sort", "updatedAt"), nil)
	// (Initial users updated within the last hour may be hidden too.)
	if slices.Contains(ids(t, sorted), id) {
		t.Errorf("sorted walk shows the user changed just now")
	}
}

package apisim

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 10, Knobs: Knobs{RateLimit: 3}})
	reset := strconv.FormatInt(testEpoch.Add(time.Hour).Unix(), 10)
	for i, want := range []string{"2, 5", "1, 4", "0, 3"} {
		r := e.get("/api/v2/users")
		if r.status != 200 || r.header.Get("x-ratelimit-limit") != "3" ||
			r.header.Get("x-ratelimit-remaining") != want || r.header.Get("x-ratelimit-reset") != reset {
			t.Fatalf("request %d: %d limit=%q remaining=%q reset=%q", i+1, r.status,
				r.header.Get("x-ratelimit-limit"), r.header.Get("x-ratelimit-remaining"), r.header.Get("x-ratelimit-reset"))
		}
	}
	e.clock.Advance(20 * time.Minute)
	r := e.get("/api/v2/users")
	var d doc
	mustUnmarshal(t, r.body, &d)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2400" || r.header.Get("x-ratelimit-remaining") != "0, 3" ||
		d.Errors[0].ID != "rateLimitExceeded" || !strings.Contains(d.Errors[0].Detail, "rate limit of 3") {
		t.Fatalf("over budget: %d Retry-After=%q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	e.clock.Advance(40 * time.Minute)
	if r := e.get("/api/v2/users"); r.status != 200 || r.header.Get("x-ratelimit-remaining") != "2, 5" {
		t.Errorf("after the window: %d %q", r.status, r.header.Get("x-ratelimit-remaining"))
	}
	if st := e.sim.Stats(); st.RateLimited != 1 || st.ByStatus[429] != 1 {
		t.Errorf("stats: %+v", st)
	}
}

func TestRateLimitEvery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 10, Knobs: Knobs{RateLimitEvery: 3, RetryAfter: 1500 * time.Millisecond}})
	var statuses []int
	for range 7 {
		r := e.get("/api/v2/users")
		statuses = append(statuses, r.status)
		if r.status == 429 && r.header.Get("Retry-After") != "2" {
			t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
		}
	}
	if want := []int{200, 200, 429, 200, 200, 429, 200}; !equalInts(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFaults(t *testing.T) {
	t.Parallel()
	t.Run("fail next", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{Users: 10, FailNext: 2, FailNextStatus: 500})
		e.sim.FailNext(0, 0)
		e.get("/api/v2/users") // cleared: succeeds
		e.sim.FailNext(2, 502)
		for range 2 {
			r := e.get("/api/v2/users")
			if r.status != 502 || r.header.Get("Content-Type") != "text/html" || !strings.Contains(string(r.body), "502 Bad Gateway") {
				t.Fatalf("%d %s %s", r.status, r.header.Get("Content-Type"), r.body)
			}
		}
		if r := e.get("/api/v2/users"); r.status != 200 {
			t.Errorf("third request: %d", r.status)
		}
		if e.sim.Stats().Faults != 2 {
			t.Errorf("Faults = %d", e.sim.Stats().Faults)
		}
	})
	t.Run("options fail next", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{Users: 10, FailNext: 1})
		var d doc
		r := e.get("/api/v2/users")
		mustUnmarshal(t, r.body, &d)
		if r.status != 503 || d.Errors[0].ID != "scheduledServerMaintenance" {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
	t.Run("fail every", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{Users: 10, Knobs: Knobs{FailEvery: 2, FailStatus: 504}})
		if e.get("/api/v2/users").status != 200 || e.get("/api/v2/users").status != 504 {
			t.Error("FailEvery 2 did not fail the second request")
		}
	})
	t.Run("fault rate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, Options{Users: 10, Knobs: Knobs{FaultRate: 0.5}})
		seen := map[int]int{}
		for range 200 {
			seen[e.get("/api/v2/users").status]++
		}
		for _, s := range []int{200, 500, 502, 503, 504} {
			if seen[s] == 0 {
				t.Errorf("status %d never seen: %v", s, seen)
			}
		}
		if seen[200] < 60 || seen[200] > 140 {
			t.Errorf("%d of 200 succeeded at FaultRate 0.5", seen[200])
		}
	})
}

func TestTruncatedBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 50, Knobs: Knobs{TruncateRate: 1}})
	r := e.do(http.MethodGet, "/api/v2/users", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/vnd.api+json" || !errors.Is(r.err, io.ErrUnexpectedEOF) {
		t.Fatalf("status %d, err %v", r.status, r.err)
	}
	if n, _ := strconv.Atoi(r.header.Get("Content-Length")); n != 2*len(r.body) && n != 2*len(r.body)+1 {
		t.Errorf("Content-Length %d for %d bytes read: want twice", n, len(r.body))
	}
	if e.sim.Stats().Truncated != 1 {
		t.Errorf("Truncated = %d", e.sim.Stats().Truncated)
	}
}

func TestPresentationKnobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 80, Knobs: Knobs{TeamsLinksOnly: true, StringIDs: true}})
	users := e.getDoc("/api/v2/users", http.StatusOK).list(t)
	for _, u := range users[:10] {
		if u.ID[0] != '"' {
			t.Fatalf("id %s is not a string", u.ID)
		}
		teams := u.Relationships["teams"]
		if teams.Data != nil || teams.Links["related"] == "" {
			t.Fatalf("teams = %+v, want links only", teams)
		}
		// Following the link lists the user's teams.
		related := e.getDoc(teams.Links["related"], http.StatusOK).list(t)
		truth, _ := e.sim.User(u.id(t))
		if got := sortedIDs(t, related); !equal64(got, sorted64(truth.Relationships["teams"])) {
			t.Fatalf("user %d related teams %v, truth %v", truth.ID, got, truth.Relationships["teams"])
		}
		if role := string(u.Relationships["role"].Data); role != "null" && !strings.Contains(role, `"id":"`) {
			t.Fatalf("role data %s: id not a string", role)
		}
	}
	// include=teams brings the data back.
	inc := e.getDoc("/api/v2/users?include=teams", http.StatusOK).list(t)
	if inc[0].Relationships["teams"].Data == nil {
		t.Error("include=teams: teams still without data")
	}
}

func equal64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sorted64(a []int64) []int64 {
	out := append([]int64(nil), a...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestSchemaDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 100, Knobs: Knobs{SchemaDrift: true}})
	langs, onboarded := 0, 0
	for _, u := range e.getDoc("/api/v2/users?page[size]=100", http.StatusOK).list(t) {
		if _, ok := u.Attributes["languagePreference"]; !ok {
			t.Fatal("no languagePreference")
		}
		if string(u.Attributes["languagePreference"]) != "null" {
			langs++
		}
		if string(u.Attributes["onboardedAt"]) != "null" {
			onboarded++
		}
	}
	if langs == 0 || onboarded == 0 {
		t.Errorf("drift attributes always null: %d %d", langs, onboarded)
	}
	u, _ := e.sim.User(1)
	if _, ok := u.Attributes["onboardedAt"]; !ok {
		t.Error("ground truth lacks the drift attributes")
	}
	e.getDoc("/api/v2/users?fields[user]=languagePreference", http.StatusOK)
}

func TestWrongTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 400, Knobs: Knobs{WrongTypeRate: 0.1}})
	byMember := map[string]int{}
	for _, u := range e.sim.Users() {
		if u.WrongType == "" {
			continue
		}
		byMember[u.WrongType]++
		switch u.WrongType {
		case "locked":
			if u.Attributes["locked"] != "yes" {
				t.Errorf("user %d locked = %v", u.ID, u.Attributes["locked"])
			}
		case "accountsViewId", "duties", "currentSignInAt":
			if _, ok := u.Attributes[u.WrongType].(string); !ok {
				t.Errorf("user %d %s = %v, want a string", u.ID, u.WrongType, u.Attributes[u.WrongType])
			}
		case "custom1":
			if _, ok := u.Attributes["custom1"].(int64); !ok {
				t.Errorf("user %d custom1 = %v", u.ID, u.Attributes["custom1"])
			}
		case "relationships.role":
			if !strings.Contains(string(u.Raw), `"role":{"data":{"type":"role","id":"r-`) {
				t.Errorf("user %d role not corrupted: %.200s", u.ID, u.Raw)
			}
		}
	}
	total := 0
	for _, n := range byMember {
		total += n
	}
	if len(byMember) < 5 || total < 20 || total > 70 {
		t.Errorf("wrong-typed users by member: %v", byMember)
	}
}

func TestChurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 100, Knobs: Knobs{Churn: Churn{Every: 2, Update: 5, Create: 1, DeleteEvery: 2}}})
	before := len(e.sim.Resources("team")) + len(e.sim.Resources("role")) + len(e.sim.Resources("profile"))
	for range 12 {
		e.get("/api/v2/users?count=false")
	}
	st := e.sim.Stats()
	if st.ChurnRounds != 6 || len(e.sim.UserIDs()) != 106 {
		t.Errorf("%d rounds, %d users; want 6 and 106", st.ChurnRounds, len(e.sim.UserIDs()))
	}
	deleted := before - len(e.sim.Resources("team")) - len(e.sim.Resources("role")) - len(e.sim.Resources("profile"))
	if deleted != 3 {
		t.Errorf("%d teams, roles and profiles deleted, want 3", deleted)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5, Knobs: Knobs{Latency: 30 * time.Millisecond}})
	start := time.Now()
	e.get("/api/v2/users?count=false")
	if time.Since(start) < 30*time.Millisecond {
		t.Error("Latency not applied")
	}
}

func TestKnobValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 5})
	bad := []Knobs{{PageSizeCap: 1001}, {FaultRate: 2}, {FaultStatuses: []int{200}}, {RateLimit: -1}, {Churn: Churn{Every: -1}}}
	for _, k := range bad {
		if err := e.sim.SetKnobs(k); err == nil {
			t.Errorf("SetKnobs(%+v) accepted", k)
		}
	}
	if err := e.sim.UpdateKnobs(func(k *Knobs) { k.TruncateRate = -1 }); err == nil {
		t.Error("UpdateKnobs accepted a negative rate")
	}
	if got := e.sim.Knobs(); got.TruncateRate != 0 {
		t.Error("a refused update changed the knobs")
	}
	if err := (Options{Users: -1, Roles: 70000, BaseURL: "nope"}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "Users") || !strings.Contains(err.Error(), "Roles") || !strings.Contains(err.Error(), "BaseURL") {
		t.Errorf("Validate = %v", err)
	}
}

// TestKnobsChangeWhileServing flips knobs and mutates while clients read,
// for the race detector.
func TestKnobsChangeWhileServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 300})
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				r := e.do(http.MethodGet, "/api/v2/users?sort=-updatedAt&page[size]=100&include=teams&count=true", nil)
				if r.status != 200 && r.status < 500 && r.status != 429 {
					t.Errorf("status %d: %s", r.status, r.body)
					return
				}
			}
		})
	}
	for i := range 40 {
		if err := e.sim.UpdateKnobs(func(k *Knobs) {
			k.OutOfOrder = i%2 == 0
			k.StringIDs = i%3 == 0
			k.FaultRate = float64(i%4) / 10
			k.RateLimitEvery = i % 5
			k.Churn = Churn{Every: 3, Update: 2, Create: 1, DeleteEvery: 10}
		}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		e.sim.UpdateUsers(5)
		_ = e.sim.Delete("team", int64(i%12+1))
		_ = e.sim.Restore("team", int64((i+6)%12+1))
		_ = e.sim.Stats()
	}
	close(done)
	wg.Wait()
}

package jsonapi

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Distinctive secrets: no error string or log line may ever contain them.
const (
	secretAccess   = "ACCESS-zq9x7-SECRET"
	secretRefresh  = "REFRESH-k3m8p-SECRET"
	secretClient   = "CLIENT-w5t2v-SECRET"
	secretRotated  = "ROTATED-h6j4n-SECRET"
	secretInBase   = "USERINFO-b8c1d-SECRET"
	testUserAgent  = "usersync/0.1.0"
	testAPIPrefix  = "/api/v2/"
	bearerStatic   = "Bearer " + secretAccess
	fakeClockStart = "2026-11-22T10:00:00Z"
)

// fakeClock is a Clock whose Sleep returns at once and moves time forward.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock(t *testing.T) *fakeClock {
	t.Helper()
	start, err := time.Parse(time.RFC3339, fakeClockStart)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeClock{now: start}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return nil
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeClock) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// newServer starts an httptest server closed at the end of the test.
func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client of srvURL with a static token, a fake clock
// and fast retries; change tweaks the options.
func newClient(t *testing.T, srvURL string, clock *fakeClock, change func(*Options)) *Client {
	t.Helper()
	opts := Options{
		BaseURL:     srvURL,
		Auth:        StaticToken(secretAccess),
		UserAgent:   testUserAgent,
		Clock:       clock,
		BackoffBase: 100 * time.Millisecond,
	}
	if change != nil {
		change(&opts)
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// userAttributes are the names of the user attributes of the spec (§2.1).
type userAttributes struct {
	ints, bools, strings, times []string
}

func userAttributeNames() userAttributes {
	return userAttributes{
		ints: []string{"accountsViewId", "callsViewId", "coachRecordingsViewId", "opportunitiesViewId",
			"prospectsViewId", "reportsTeamPerfViewId", "reportsViewId", "tasksViewId", "teamsViewId",
			"usersViewId", "defaultRulesetId"},
		bools: []string{"activityNotificationsDisabled", "bounceWarningEmailEnabled", "dailyDigestEmailEnabled",
			"weeklyDigestEmailEnabled", "enableVoiceRecordings", "engagementEmailsEnabled",
			"keepBridgePhoneConnected", "locked", "mailboxErrorEmailEnabled", "meetingEngagementNotificationEnabled",
			"notificationsEnabled", "oceClickToDialEverywhere", "oceMailToolbar", "oceCrmEmailDecorating",
			"oceCrmPhoneDecorating", "oceUniversalTaskFlow", "oceWindowMode", "pluginAlertNotificationEnabled",
			"prefersLocalPresence", "senderNotificationsExcluded", "textingEmailNotifications",
			"unknownReplyEmailEnabled", "voicemailNotificationEnabled"},
		strings: []string{"bridgePhone", "bridgePhoneExtension", "inboundBridgePhone", "inboundBridgePhoneExtension",
			"controlledTabDefault", "custom1", "custom2", "custom3", "custom4", "custom5", "email", "firstName",
			"lastName", "name", "inboundCallBehavior", "inboundPhoneType", "inboundVoicemailCustomMessageText",
			"inboundVoicemailMessageTextVoice", "inboundVoicemailPromptType", "jobRoleByName", "oceMailTrackingState",
			"phoneCountryCode", "phoneNumber", "phoneType", "preferredVoiceRegion", "primaryTimezone",
			"secondaryTimezone", "tertiaryTimezone", "scimExternalId", "scimSource", "title", "userGuid", "username"},
		times: []string{"createdAt", "currentSignInAt", "lastSignInAt", "passwordExpiresAt", "updatedAt"},
	}
}

// appendUser appends one realistic user resource (~2.3 KB, 73 attributes
// of the spec plus duties, eight relationships) to b.
func appendUser(b *bytes.Buffer, id int, base string) {
	names := userAttributeNames()
	n := strconv.Itoa(id)
	b.WriteString(`{"type":"user","id":` + n + `,"attributes":{`)
	for i, name := range names.ints {
		if i%4 == 3 {
			b.WriteString(`"` + name + `":null,`)
			continue
		}
		b.WriteString(`"` + name + `":` + strconv.Itoa(id*7+i) + `,`)
	}
	for i, name := range names.bools {
		b.WriteString(`"` + name + `":` + strconv.FormatBool((id+i)%3 == 0) + `,`)
	}
	for i, name := range names.strings {
		switch {
		case name == "inboundVoicemailCustomMessageText":
			b.WriteString(`"` + name + `":"Hello, you have reached user ` + n + `. Please leave a message after the tone \u2014 thanks!",`)
		case i%5 == 4:
			b.WriteString(`"` + name + `":null,`)
		default:
			b.WriteString(`"` + name + `":"` + name[:min(len(name), 6)] + `-` + n + `",`)
		}
	}
	for i, name := range names.times {
		b.WriteString(`"` + name + `":"2026-0` + strconv.Itoa(1+i) + `-1` + strconv.Itoa(id%10) + `T10:15:00.123Z",`)
	}
	b.WriteString(`"duties":[{"id":"d` + n + `","name":"Sales"}]},"relationships":{`)
	for i, rel := range []string{"role", "profile", "creator", "updater", "mailbox"} {
		typ := map[string]string{"creator": "user", "updater": "user"}[rel]
		if typ == "" {
			typ = rel
		}
		b.WriteString(`"` + rel + `":{"data":{"type":"` + typ + `","id":` + strconv.Itoa(id%50+i) + `}},`)
	}
	b.WriteString(`"teams":{"data":[{"type":"team","id":` + strconv.Itoa(id%9) + `},{"type":"team","id":` + strconv.Itoa(id%13+20) + `}]},`)
	b.WriteString(`"mailboxes":{"data":[{"type":"mailbox","id":` + n + `}],"links":{"related":"` + base + `/api/v2/mailboxes?filter%5Buser%5D%5Bid%5D=` + n + `"}},`)
	b.WriteString(`"contentCategories":{"data":[{"type":"contentCategory","id":1},{"type":"contentCategory","id":2},{"type":"contentCategory","id":3}]},`)
	b.WriteString(`"recipients":{"links":{"related":"` + base + `/api/v2/users/` + n + `/recipients"}}},`)
	b.WriteString(`"links":{"self":"` + base + `/api/v2/users/` + n + `"},"meta":{"canWrite":true}}`)
}

// usersPage returns a collection document of users first..first+n-1 with
// the given next link ("" for none).
func usersPage(first, n int, base, next string) []byte {
	var b bytes.Buffer
	b.Grow(n * 2400)
	b.WriteString(`{"data":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		appendUser(&b, first+i, base)
	}
	b.WriteString(`],"meta":{"count":null},"links":{"first":"` + base + `/api/v2/users?page%5Bsize%5D=1000"`)
	if next != "" {
		b.WriteString(`,"next":"` + next + `"`)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

// request is what a test server saw of one request.
type request struct {
	Method   string
	Path     string
	RawQuery string
	Query    map[string][]string
	Header   http.Header
}

// recorder records the requests a test server receives.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (rec *recorder) add(r *http.Request) int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.reqs = append(rec.reqs, request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Query: r.URL.Query(), Header: r.Header.Clone()})
	return len(rec.reqs)
}

func (rec *recorder) all() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.reqs...)
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// writeDoc writes a JSON:API body with the given status.
func writeDoc(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// pageBody is a small users page of ids with a raw "links" member value
// (such as `{"next":"..."}`, `{"next":null}` or `{}`).
func pageBody(links string, ids ...int) string {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"user","id":` + strconv.Itoa(id) + `,"attributes":{"email":"u` + strconv.Itoa(id) + `@example.com"}}`)
	}
	b.WriteString(`],"meta":{"count":null},"links":` + links + `}`)
	return b.String()
}

package normalize

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsondoc"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// testPolicy hashes email and drops phoneNumber (by its column name) and
// unknown attributes.
func testPolicy(t testing.TB) *Policy {
	t.Helper()
	p, err := NewPolicy(schema.User(), PolicyConfig{Hash: []string{"email"}, Drop: []string{"phone_number"}, DropUnknown: true, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hmacHex(v string) string {
	m := hmac.New(sha256.New, testKey)
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

func TestNewPolicyRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg        PolicyConfig
		list, want string
	}{
		{PolicyConfig{Hash: []string{"emial"}, Key: testKey}, "hash", `"emial" is not a user attribute (did you mean email?)`},
		{PolicyConfig{Drop: []string{"phone_nubmer"}}, "drop", "did you mean phoneNumber?"},
		{PolicyConfig{Hash: []string{"email"}, Drop: []string{"email"}, Key: testKey}, "drop", "email is in both the hash and the drop lists"},
		{PolicyConfig{Hash: []string{"email"}}, "key", "attributes to hash need a key"},
		{PolicyConfig{Hash: []string{"email"}, Key: []byte("short")}, "key", "shorter than 32 bytes"},
		{PolicyConfig{Hash: []string{"currentSignInAt"}, Key: testKey}, "hash", "currentSignInAt holds datetime values; only text attributes can be hashed"},
		{PolicyConfig{Drop: []string{"updated_at"}}, "drop", "updatedAt is needed to sync and cannot be hashed or dropped"},
	} {
		_, err := NewPolicy(schema.User(), tc.cfg)
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.List != tc.list || !strings.Contains(pe.Reason, tc.want) {
			t.Errorf("%+v: got %v, want a %s error saying %q", tc.cfg, err, tc.list, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), string(testKey)) {
			t.Errorf("error holds the key: %v", err)
		}
	}
	if p, err := NewPolicy(schema.User(), PolicyConfig{Key: testKey}); p != nil || err != nil {
		t.Errorf("empty policy: got %v, %v; want nil, nil", p, err)
	}
}

func TestPolicyFingerprint(t *testing.T) {
	t.Parallel()
	p := testPolicy(t)
	fp := p.Fingerprint()
	if !strings.HasPrefix(fp, "hash=email drop=phoneNumber unknown=drop key=") || strings.Contains(fp, string(testKey)) {
		t.Errorf("fingerprint %q", fp)
	}
	if p.KeyID() != hmacHex("usersync-key-id")[:16] {
		t.Errorf("key id %q", p.KeyID())
	}
	if (*Policy)(nil).Fingerprint() != "none" {
		t.Error("a nil policy's fingerprint is not none")
	}
}

// TestPolicyOnSimulatorPages types simulator pages under the policy on both
// paths: the same rows, the email hashed, the phone number and unknown
// attributes gone, and the content hash that of the row the policy leaves.
func TestPolicyOnSimulatorPages(t *testing.T) {
	t.Parallel()
	plain, np := New(schema.User()), New(schema.User())
	np.SetPolicy(testPolicy(t))
	res := schema.User()
	email, _ := attributeIndex(res, "email")
	phone, _ := attributeIndex(res, "phoneNumber")
	checked := 0
	for _, data := range simPages(t, 600, apisim.Knobs{SchemaDrift: true}) {
		got := samePage(t, np, data)
		want, err := plain.decodePage(data)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got.Rows {
			g, w := got.Rows[i], want.Rows[i]
			if w.Values[email] != nil && g.Values[email] != hmacHex(w.Values[email].(string)) {
				t.Fatalf("user %d: email %v is not the HMAC of the email sent", g.ID, g.Values[email])
			}
			if g.Values[phone] != nil || string(g.Raw) != "{}" || len(g.Unknown) == 0 {
				t.Fatalf("user %d: phone %v, raw %s, unknown %v", g.ID, g.Values[phone], g.Raw, g.Unknown)
			}
			w.Values = slices.Clone(w.Values)
			np.policy.Apply(&w)
			if string(g.Hash()) != string(w.Hash()) {
				t.Fatalf("user %d: the content hash is not that of the row the policy leaves", g.ID)
			}
			checked++
		}
	}
	if checked < 600 {
		t.Fatalf("checked %d users", checked)
	}
}

func TestRedactResource(t *testing.T) {
	t.Parallel()
	p := testPolicy(t)
	raw := `{"type":"user","id":7,"attributes":{"email":12345,"phoneNumber":"+1 555 0100","firstName":"Ann","onboardedAt":"x","locked":"yes"},"meta":{}}`
	got := string(p.RedactResource([]byte(raw)))
	want := `{"type":"user","id":7,"attributes":{"email":"` + hmacHex("12345") + `","firstName":"Ann","locked":"yes"},"meta":{}}`
	if got != want {
		t.Errorf("redacted\n got %s\nwant %s", got, want)
	}
	stored := func(name string, _ gjson.Result) bool { return name == "email" }
	if again := string(p.RedactStored([]byte(got), stored)); again != got {
		t.Errorf("redacting a record whose email is known to be hashed changed it: %s", again)
	}
	email := `{"attributes":{"email":"ann@example.com"}}`
	if got := p.RedactResource([]byte(email)); gjson.GetBytes(got, "attributes.email").Str != hmacHex("ann@example.com") {
		t.Errorf("string email redacted to %s", got)
	}
	for _, bad := range []string{`[1]`, `{"attributes":"ann@example.com"}`, `{"attributes":{"email":"ann@example.com"`} {
		if got := string(p.RedactResource([]byte(bad))); strings.Contains(got, "ann@example.com") || !gjson.Valid(got) {
			t.Errorf("%s redacted to %s", bad, got)
		}
	}
	if got := (*Policy)(nil).RedactResource([]byte(email)); string(got) != email {
		t.Errorf("a nil policy changed %s", got)
	}
}

// TestPolicyHashesHexLookingValues: a value of 64 lower-case hex digits
// from the API is hashed like any other, in a row and in a quarantined
// resource (it was kept in clear, taken for a hash).
func TestPolicyHashesHexLookingValues(t *testing.T) {
	t.Parallel()
	p := testPolicy(t)
	hexEmail := hmacHex("looks like a hash")
	n := New(schema.User())
	n.SetPolicy(p)
	row, err := n.Row(jsondoc.Resource{Type: "user", ID: 7, Attributes: []byte(`{"email":"` + hexEmail + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	email, _ := attributeIndex(schema.User(), "email")
	if row.Values[email] != hmacHex(hexEmail) {
		t.Errorf("row: email %v, want the HMAC of the hex email sent", row.Values[email])
	}
	red := p.RedactResource([]byte(`{"attributes":{"email":"` + hexEmail + `"}}`))
	if got := gjson.GetBytes(red, "attributes.email").Str; got != hmacHex(hexEmail) {
		t.Errorf("quarantine: email %s, want the HMAC of the hex email sent", got)
	}
}

// TestPolicyWrongTypeQuarantines: an email of the wrong JSON type is
// rejected as without a policy, and the error does not quote it.
func TestPolicyWrongTypeQuarantines(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	n.SetPolicy(testPolicy(t))
	_, err := n.Row(jsondoc.Resource{Type: "user", ID: 7, Attributes: []byte(`{"email":["ann@example.com"]}`)})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "email" || strings.Contains(err.Error(), "ann@") {
		t.Fatalf("got %v", err)
	}
}

// TestContentHashTellsNothingTheRowDoesNot: under a policy, two users that
// differ only in what the policy drops (a phone number, an attribute the
// catalog does not know) have the same content hash, and one whose hashed
// email differs has the hash of the stored HMAC, not of the email: the
// hash is a function of the stored row, so guessing a dropped or hashed
// value against it tells nothing (issue 37: the hash of the attributes as
// sent let a reader test guessed emails and phone numbers).
func TestContentHashTellsNothingTheRowDoesNot(t *testing.T) {
	t.Parallel()
	n := New(schema.User())
	p := testPolicy(t)
	n.SetPolicy(p)
	user := func(attrs string) Row {
		t.Helper()
		r, err := n.Row(decodeOne(t, `{"data": {"id": 7, "type": "user", "attributes": {`+attrs+`}}}`))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := user(`"firstName": "Ada", "email": "ada@example.com", "phoneNumber": "+1 555 0100", "updatedAt": "2024-05-01T12:34:56Z"`)
	b := user(`"email": "ada@example.com", "firstName": "Ada", "phoneNumber": "+44 20 7946 0000", "hobby": "chess", "updatedAt": "2024-05-01T12:34:56Z"`)
	if !bytes.Equal(a.Hash(), b.Hash()) {
		t.Error("users differing only in dropped values have different content hashes")
	}
	email, _ := attributeIndex(schema.User(), "email")
	stored := slices.Clone(a.Values)
	stored[email] = p.HashString("ada@example.com")
	if !bytes.Equal(a.Hash(), ContentHash(stored, []byte("{}"), a.ToOne, nil)) {
		t.Error("the content hash is not that of the stored values")
	}
	c := user(`"firstName": "Ada", "email": "bob@example.com", "updatedAt": "2024-05-01T12:34:56Z"`)
	if bytes.Equal(a.Hash(), c.Hash()) {
		t.Error("another hashed email left the content hash as it was")
	}
}

package config

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
)

// TestPIIConfigErrors: every bad personal-data setting is refused in one
// line naming the setting, which never echoes the key.
func TestPIIConfigErrors(t *testing.T) {
	t.Parallel()
	const key = "k3y-0123456789abcdef0123456789ab"
	for _, tt := range []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  string
	}{
		{"unknown attribute", map[string]string{"USERSYNC_PII_HASH": "emial", "USERSYNC_PII_KEY": key}, nil, `USERSYNC_PII_HASH: "emial" is not a user attribute (did you mean email?)`},
		{"unknown column", map[string]string{"USERSYNC_PII_DROP": "phone_numbr"}, nil, `USERSYNC_PII_DROP: "phone_numbr" is not a user attribute (did you mean phoneNumber?)`},
		{"unknown by flag", nil, map[string]string{"pii-drop": "frist_name"}, `--pii-drop: "frist_name" is not a user attribute (did you mean firstName?)`},
		{"both lists", map[string]string{"USERSYNC_PII_HASH": "email", "USERSYNC_PII_DROP": "phoneNumber,email", "USERSYNC_PII_KEY": key}, nil, "USERSYNC_PII_DROP: email is in both the hash and the drop lists"},
		{"hash without key", map[string]string{"USERSYNC_PII_HASH": "email"}, nil, "USERSYNC_PII_HASH is set without USERSYNC_PII_KEY"},
		{"short key", map[string]string{"USERSYNC_PII_HASH": "email", "USERSYNC_PII_KEY": "k3y-short"}, nil, "USERSYNC_PII_KEY is shorter than 32 bytes"},
		{"hash a number", map[string]string{"USERSYNC_PII_HASH": "accountsViewId", "USERSYNC_PII_KEY": key}, nil, "USERSYNC_PII_HASH: accountsViewId holds integer values; only text attributes can be hashed"},
		{"retention", map[string]string{"USERSYNC_DELETED_RETENTION": "three months"}, nil, "USERSYNC_DELETED_RETENTION must be off or a number of days"},
		{"retention too short", nil, map[string]string{"deleted-retention": "1m"}, "--deleted-retention must be off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(lookupMap(tt.env), tt.flags)
			errs := fmt.Sprint(err)
			if err == nil || !strings.Contains(errs, tt.want) || strings.Contains(errs, "\n") {
				t.Errorf("error %q; want one line with %q", errs, tt.want)
			}
			if strings.Contains(errs, "k3y-") {
				t.Errorf("error echoes the key: %q", errs)
			}
		})
	}
	env := map[string]string{"USERSYNC_PII_HASH": "email", "USERSYNC_PII_DROP": "phone_number", "USERSYNC_PII_KEY": key, "USERSYNC_DELETED_RETENTION": "90d"}
	if _, err := Load(lookupMap(env), nil); err != nil {
		t.Errorf("a valid policy: %v", err)
	}
}

// TestExamplePolicyCoversPersonalData: the example policy of the settings
// reference and of docs/operations.md hashes or drops every attribute the
// catalog marks personal (a policy dropping lastName but keeping name, the
// full name, protected nothing), and the two examples are the same.
func TestExamplePolicyCoversPersonalData(t *testing.T) {
	t.Parallel()
	examples := map[string]string{}
	for _, s := range piiSettings() {
		examples[s.Env] = s.Example
	}
	covered := map[string]bool{}
	for _, env := range []string{"USERSYNC_PII_HASH", "USERSYNC_PII_DROP"} {
		for _, name := range splitList(examples[env]) {
			covered[name] = true
		}
	}
	for _, a := range schema.User().Attributes {
		if a.Personal && !covered[a.Name] {
			t.Errorf("the example policy neither hashes nor drops %s, a personal attribute", a.Name)
		}
	}
	ops, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"USERSYNC_PII_HASH", "USERSYNC_PII_DROP"} {
		if line := env + "=" + examples[env] + "\n"; !strings.Contains(string(ops), line) {
			t.Errorf("docs/operations.md's example lacks %q", line)
		}
	}
}

// lookupMap is a lookup over env, for Load.
func lookupMap(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

package schema

import (
	"strings"
	"testing"
)

func TestColumnName(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"accountsViewId", "accounts_view_id"},
		{"custom1", "custom1"},
		{"oceCrmEmailDecorating", "oce_crm_email_decorating"},
		{"id", "id"},
		{"isAdmin", "is_admin"},
		{"parentRole", "parent_role"},
		{"reportsTeamPerfViewId", "reports_team_perf_view_id"},
		{"inboundVoicemailCustomMessageText", "inbound_voicemail_custom_message_text"},
		{"userGuid", "user_guid"},
		{"phoneCountryCode", "phone_country_code"},
		{"A", "a"},
	}
	for _, tt := range tests {
		if got := ColumnName(tt.in); got != tt.want {
			t.Errorf("ColumnName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestUserAttributesFollowTheRule checks every attribute of the spec's user,
// by the rule spelled out independently: split before each upper-case letter.
func TestUserAttributesFollowTheRule(t *testing.T) {
	t.Parallel()
	spec := map[JSONType][]string{
		Integer: {"accountsViewId", "callsViewId", "coachRecordingsViewId", "opportunitiesViewId", "prospectsViewId",
			"reportsTeamPerfViewId", "reportsViewId", "tasksViewId", "teamsViewId", "usersViewId", "defaultRulesetId"},
		Boolean: {"activityNotificationsDisabled", "bounceWarningEmailEnabled", "dailyDigestEmailEnabled",
			"weeklyDigestEmailEnabled", "enableVoiceRecordings", "engagementEmailsEnabled", "keepBridgePhoneConnected",
			"locked", "mailboxErrorEmailEnabled", "meetingEngagementNotificationEnabled", "notificationsEnabled",
			"oceClickToDialEverywhere", "oceMailToolbar", "oceCrmEmailDecorating", "oceCrmPhoneDecorating",
			"oceUniversalTaskFlow", "oceWindowMode", "pluginAlertNotificationEnabled", "prefersLocalPresence",
			"senderNotificationsExcluded", "textingEmailNotifications", "unknownReplyEmailEnabled",
			"voicemailNotificationEnabled"},
		String: {"bridgePhone", "bridgePhoneExtension", "inboundBridgePhone", "inboundBridgePhoneExtension",
			"controlledTabDefault", "custom1", "custom2", "custom3", "custom4", "custom5", "email", "firstName",
			"lastName", "name", "inboundCallBehavior", "inboundPhoneType", "inboundVoicemailCustomMessageText",
			"inboundVoicemailMessageTextVoice", "inboundVoicemailPromptType", "jobRoleByName", "oceMailTrackingState",
			"phoneCountryCode", "phoneNumber", "phoneType", "preferredVoiceRegion", "primaryTimezone",
			"secondaryTimezone", "tertiaryTimezone", "scimExternalId", "scimSource", "title", "userGuid", "username"},
		DateTime: {"createdAt", "currentSignInAt", "lastSignInAt", "passwordExpiresAt", "updatedAt"},
		Object:   {"duties"},
	}
	u := User()
	n := 0
	for typ, names := range spec {
		for _, name := range names {
			n++
			a, ok := u.Attribute(name)
			if !ok {
				t.Errorf("attribute %s missing from the catalog", name)
				continue
			}
			if a.Type != typ {
				t.Errorf("attribute %s: type %v, want %v", name, a.Type, typ)
			}
			var want strings.Builder
			for _, r := range name {
				if r >= 'A' && r <= 'Z' {
					want.WriteString("_" + strings.ToLower(string(r)))
				} else {
					want.WriteRune(r)
				}
			}
			if a.Column() != want.String() {
				t.Errorf("attribute %s: column %s, want %s", name, a.Column(), want.String())
			}
			if a.Meaning == "" {
				t.Errorf("attribute %s has no meaning", name)
			}
		}
	}
	if n != len(u.Attributes) {
		t.Errorf("catalog has %d user attributes, the spec %d", len(u.Attributes), n)
	}
}

func TestUserLimits(t *testing.T) {
	t.Parallel()
	u := User()
	for name, want := range map[string]int{"custom1": 225, "custom5": 225, "phoneCountryCode": 2,
		"inboundVoicemailCustomMessageText": 1024, "email": 255, "name": 0, "userGuid": 0, "phoneNumber": 0} {
		if a, _ := u.Attribute(name); a.MaxLength != want {
			t.Errorf("%s: max length %d, want %d", name, a.MaxLength, want)
		}
	}
	if a, _ := u.Attribute("inboundPhoneType"); strings.Join(a.Enum, ",") != "bridge,voip,bridge_and_voip" {
		t.Errorf("inboundPhoneType enum = %v", a.Enum)
	}
}

func TestColumnsUniquePerTable(t *testing.T) {
	t.Parallel()
	for _, tb := range Tables() {
		seen := map[string]bool{}
		for _, c := range tb.Columns {
			if seen[c.Name] {
				t.Errorf("table %s: column %s twice", tb.Name, c.Name)
			}
			seen[c.Name] = true
			if c.Meaning == "" {
				t.Errorf("table %s: column %s has no meaning", tb.Name, c.Name)
			}
		}
	}
}

func TestValidateIdentifier(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"usersync", "_x", "a1_b2", strings.Repeat("a", MaxIdentifierLength)} {
		if err := ValidateIdentifier(ok); err != nil {
			t.Errorf("ValidateIdentifier(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1abc", "Users", "a-b", `a"b`, "a b", "pg_x", "ü", strings.Repeat("a", MaxIdentifierLength+1), "x;drop"} {
		if err := ValidateIdentifier(bad); err == nil {
			t.Errorf("ValidateIdentifier(%q) accepted", bad)
		}
	}
}

func TestMigrationsRender(t *testing.T) {
	t.Parallel()
	ms, err := Migrations("my_schema")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("migrations = %+v", ms)
	}
	for _, m := range ms {
		if strings.Contains(m.SQL, "{{") {
			t.Errorf("%s: unreplaced placeholder", m.Name)
		}
		if !strings.Contains(m.SQL, `"my_schema".`) {
			t.Errorf("%s: does not use the schema", m.Name)
		}
	}
	if _, err := Migrations("bad name"); err == nil {
		t.Error("Migrations accepted an invalid schema name")
	}
}

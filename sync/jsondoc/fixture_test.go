package jsondoc

import (
	"bytes"
	"strconv"
)

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

package schema

// The declarations below carry the facts of the API's documentation
// (attribute names, JSON types, limits, allowed values, meanings). Order is the
// column order of the warehouse tables.

func view(name, meaning string) Attribute {
	return Attribute{Name: name, Type: Integer, Meaning: "id of the default smart view on " + meaning}
}

func flag(name, meaning string) Attribute {
	return Attribute{Name: name, Type: Boolean, Meaning: meaning}
}

func text(name string, maxLength int, meaning string, enum ...string) Attribute {
	return Attribute{Name: name, Type: String, MaxLength: maxLength, Meaning: meaning, Enum: enum}
}

// personal marks an attribute that identifies a person or holds what they
// wrote: usersync forget clears it whatever the personal-data policy.
func personal(a Attribute) Attribute {
	a.Personal = true
	return a
}

func stamp(name, meaning string) Attribute {
	return Attribute{Name: name, Type: DateTime, Meaning: meaning}
}

// User is the user resource (spec §2.1–2.2): an individual who uses the application.
func User() Resource {
	return Resource{
		Type:    "user",
		Path:    "users",
		Table:   "users",
		Meaning: "Users of the sales-engagement platform, one row per user id, as last seen by the API.",
		Attributes: []Attribute{
			view("accountsViewId", "the account index"),
			view("callsViewId", "the calls view"),
			view("coachRecordingsViewId", "the call-coaching recordings view"),
			view("opportunitiesViewId", "the opportunity index"),
			view("prospectsViewId", "the prospect index"),
			view("reportsTeamPerfViewId", "the team performance reports"),
			view("reportsViewId", "the reports"),
			view("tasksViewId", "the task index"),
			view("teamsViewId", "the team index"),
			view("usersViewId", "the user index"),
			{Name: "defaultRulesetId", Type: Integer, Meaning: "id of the default ruleset assigned to the user"},

			flag("activityNotificationsDisabled", "activity notifications are disabled"),
			flag("bounceWarningEmailEnabled", "bounce warning emails are enabled"),
			flag("dailyDigestEmailEnabled", "daily digest emails are enabled"),
			flag("weeklyDigestEmailEnabled", "weekly digest emails are enabled"),
			flag("enableVoiceRecordings", "voice recordings are enabled"),
			flag("engagementEmailsEnabled", "engagement emails are enabled"),
			flag("keepBridgePhoneConnected", "the bridge phone stays connected between outbound calls"),
			flag("locked", "the user is locked out of the application"),
			flag("mailboxErrorEmailEnabled", "mailbox error emails are enabled"),
			flag("meetingEngagementNotificationEnabled", "meeting engagement notifications are enabled"),
			flag("notificationsEnabled", "notifications are enabled"),
			flag("oceClickToDialEverywhere", "phone numbers in other web applications launch a call from the service"),
			flag("oceMailToolbar", "the mail-client toolbar of the companion extension is enabled"),
			flag("oceCrmEmailDecorating", "emails are enabled in the extension's CRM integration"),
			flag("oceCrmPhoneDecorating", "phone calls are enabled in the extension's CRM integration"),
			flag("oceUniversalTaskFlow", "the extension's universal task flow is enabled"),
			flag("oceWindowMode", "the extension's window mode is enabled"),
			flag("pluginAlertNotificationEnabled", "plugin-related error notifications are enabled"),
			flag("prefersLocalPresence", "voice calls should come from a local phone number"),
			flag("senderNotificationsExcluded", "sender notifications are excluded"),
			flag("textingEmailNotifications", "an email notification is sent when a text message is missed"),
			flag("unknownReplyEmailEnabled", "unknown reply emails are enabled"),
			flag("voicemailNotificationEnabled", "voicemail notifications are enabled"),

			personal(text("bridgePhone", 255, "outbound bridge phone number")),
			personal(text("bridgePhoneExtension", 255, "outbound bridge phone extension")),
			personal(text("inboundBridgePhone", 255, "inbound bridge phone number")),
			personal(text("inboundBridgePhoneExtension", 255, "inbound bridge phone extension")),
			text("controlledTabDefault", 255, "preferred default tab in the task flow"),
			text("custom1", 225, "value of custom field 1"),
			text("custom2", 225, "value of custom field 2"),
			text("custom3", 225, "value of custom field 3"),
			text("custom4", 225, "value of custom field 4"),
			text("custom5", 225, "value of custom field 5"),
			{Name: "email", Type: String, MaxLength: 255, Format: "email", Personal: true, Meaning: "the user's email address; cannot be updated through the API"},
			personal(text("firstName", 255, "first name")),
			personal(text("lastName", 255, "last name")),
			personal(text("name", 0, "full name")),
			text("inboundCallBehavior", 255, "behavior of inbound calls", "inbound_bridge", "inbound_voicemail"),
			text("inboundPhoneType", 255, "phone type for inbound calls", "bridge", "voip", "bridge_and_voip"),
			personal(text("inboundVoicemailCustomMessageText", 1024, "inbound voicemail message text")),
			text("inboundVoicemailMessageTextVoice", 255, "voice gender reading the voicemail message", "man", "woman"),
			text("inboundVoicemailPromptType", 255, "type of inbound voicemail", "automated", "recorded", "off"),
			text("jobRoleByName", 255, "job role name"),
			text("oceMailTrackingState", 255, "email tracking setting when the extension is used with the mail client"),
			text("phoneCountryCode", 2, "country code of the user's phone"),
			personal(text("phoneNumber", 0, "the user's phone number")),
			text("phoneType", 255, "phone type for outbound calls", "bridge", "voip"),
			text("preferredVoiceRegion", 255, "voice provider data center used for connecting calls"),
			text("primaryTimezone", 255, "primary timezone for scheduling meetings"),
			text("secondaryTimezone", 255, "secondary timezone"),
			text("tertiaryTimezone", 255, "tertiary timezone"),
			personal(text("scimExternalId", 255, "id from the SCIM provisioning service that created the user")),
			text("scimSource", 255, "name of the SCIM provisioning source"),
			text("title", 255, "job title"),
			personal(text("userGuid", 0, "globally unique id of the user")),
			personal(text("username", 255, "readable unique identifier of the user")),

			stamp("createdAt", "when the user was created"),
			stamp("currentSignInAt", "most recent sign-in"),
			stamp("lastSignInAt", "previous sign-in"),
			stamp("passwordExpiresAt", "when the user's password expires"),
			stamp("updatedAt", "when the user was last updated"),

			{Name: "duties", Type: Object, Meaning: "the user's work roles (duties), as the JSON object the API sends"},
		},
		Relationships: []Relationship{
			{Name: "role", RelatedType: "role", Meaning: "role of the user", Filterable: true},
			{Name: "profile", RelatedType: "profile", Meaning: "the user's profile", Filterable: true},
			{Name: "creator", RelatedType: "user", Meaning: "creator of the user"},
			{Name: "updater", RelatedType: "user", Meaning: "most recent updater of the user"},
			{Name: "mailbox", RelatedType: "mailbox", Meaning: "default mailbox"},
			{Name: "teams", ToMany: true, RelatedType: "team", Meaning: "teams the user belongs to", Filterable: true, OwnTable: true},
			{Name: "contentCategories", ToMany: true, RelatedType: "contentCategory", Meaning: "groupings of sequences, snippets and templates the user can access"},
			{Name: "contentCategoryOwnerships", ToMany: true, RelatedType: "contentCategoryOwnership", Meaning: "content category ownerships of the user"},
			{Name: "directAssignedTeams", ToMany: true, RelatedType: "team", Meaning: "teams the user was assigned to directly"},
			{Name: "roleAssignedTeams", ToMany: true, RelatedType: "team", Meaning: "teams the user was assigned to through a role"},
			{Name: "mailboxes", ToMany: true, RelatedType: "mailbox", Meaning: "all mailboxes of the user"},
			{Name: "recipients", ToMany: true, RelatedType: "recipient", Meaning: "recipients included by default in all emails the user composes"},
			{Name: "outboundVoicemails", ToMany: true, RelatedType: "outboundVoicemail", Meaning: "outbound voicemails of the user"},
			{Name: "voicemailPrompts", ToMany: true, RelatedType: "voicemailPrompt", Meaning: "voicemail prompts of the user"},
		},
	}
}

// Team is the team resource: a group of users.
func Team() Resource {
	return Resource{
		Type:    "team",
		Path:    "teams",
		Table:   "teams",
		Meaning: "Teams of users, one row per team id.",
		Attributes: []Attribute{
			text("name", 0, "name of the team"),
			text("color", 0, "color of the team in the application"),
			text("scimExternalId", 255, "id from the SCIM provisioning service that created the team"),
			text("scimSource", 255, "name of the SCIM provisioning source"),
			stamp("createdAt", "when the team was created"),
			stamp("updatedAt", "when the team was last updated"),
		},
	}
}

// Role is the role resource: where a user falls within the organization's
// structure. Roles are hierarchical.
func Role() Resource {
	return Resource{
		Type:    "role",
		Path:    "roles",
		Table:   "roles",
		Meaning: "Roles: where a user falls within the organization's structure; hierarchical through parent_role_id.",
		Attributes: []Attribute{
			text("name", 0, "name of the role, e.g. Vice-President"),
			stamp("createdAt", "when the role was created"),
			stamp("updatedAt", "when the role was last updated"),
		},
		Relationships: []Relationship{
			{Name: "parentRole", RelatedType: "role", Meaning: "the parent of this role in the hierarchy", Filterable: true},
		},
	}
}

// Profile is the profile resource: what a user can see and do.
func Profile() Resource {
	return Resource{
		Type:    "profile",
		Path:    "profiles",
		Table:   "profiles",
		Meaning: "Profiles: what a user can see and do in the application.",
		Attributes: []Attribute{
			text("name", 0, "name of the profile, e.g. Admin"),
			flag("isAdmin", "the profile has administrator rights"),
			text("specialId", 0, "special marker of the profile: admin or default"),
			stamp("createdAt", "when the profile was created"),
			stamp("updatedAt", "when the profile was last updated"),
		},
	}
}

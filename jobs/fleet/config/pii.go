package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/normalize"
)

// piiSettings are the settings of the personal-data policy and of the purge
// of long-deleted users.
func piiSettings() []Setting {
	return []Setting{
		{Env: "USERSYNC_PII_HASH", Scope: PerAccount, Flag: "pii-hash", Meaning: "comma-separated user attributes (API names like email, or column names like phone_number) stored as a keyed hash: HMAC-SHA256 under USERSYNC_PII_KEY, in hex, so equal values still join across tables and runs. Only text attributes can be hashed.",
			Example: "email,username,userGuid,scimExternalId",
			set:     func(c *Config, v string) error { c.PIIHash = splitList(v); return nil }},
		{Env: "USERSYNC_PII_DROP", Scope: PerAccount, Flag: "pii-drop", Meaning: "comma-separated user attributes never stored: the column stays, always null, its comment saying it is dropped by policy.",
			Example: "firstName,lastName,name,phoneNumber,bridgePhone,bridgePhoneExtension,inboundBridgePhone,inboundBridgePhoneExtension,inboundVoicemailCustomMessageText",
			set:     func(c *Config, v string) error { c.PIIDrop = splitList(v); return nil }},
		{Env: "USERSYNC_PII_DROP_UNKNOWN", Scope: PerAccount, Flag: "pii-drop-unknown", Default: "false", Meaning: "keep attributes the catalog does not know (schema drift) out of users.raw, the history and quarantine; they are still counted as drift.",
			set: func(c *Config, v string) error { return parseBool(&c.PIIDropUnknown, v) }},
		{Env: "USERSYNC_PII_KEY", Scope: PerAccount, Meaning: "the key of USERSYNC_PII_HASH's HMAC, at least 32 bytes (e.g. openssl rand -hex 32); keep it: another key hashes the same value differently. Also read from USERSYNC_PII_KEY_FILE.", Secret: true,
			set: func(c *Config, v string) error { c.PIIKey = v; return nil }},
		{Env: "USERSYNC_DELETED_RETENTION", Scope: PerAccount, Flag: "deleted-retention", Default: "off", Meaning: "how long users marked deleted are kept (days like 90d, or a duration); the reconcile job removes those deleted longer ago with their history, memberships and quarantine records; off keeps them forever.",
			set: func(c *Config, v string) error {
				if v == "off" {
					c.DeletedRetention = 0
					return nil
				}
				if err := parseAge(&c.DeletedRetention, v, 36500); err != nil || c.DeletedRetention < time.Hour {
					return errors.New("must be off or a number of days (like 90d) or a duration of at least 1h, not " + fmt.Sprintf("%q", v))
				}
				return nil
			}},
	}
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// buildPolicy checks the personal-data settings against the catalog and
// returns the policy (nil when none is set). Errors name the setting and
// never hold the key.
func buildPolicy(c Config, sources map[string]string) (*normalize.Policy, error) {
	p, err := normalize.NewPolicy(schema.User(), normalize.PolicyConfig{
		Hash: c.PIIHash, Drop: c.PIIDrop, DropUnknown: c.PIIDropUnknown, Key: []byte(c.PIIKey)})
	var pe *normalize.PolicyError
	if !errors.As(err, &pe) {
		return p, err
	}
	switch pe.List {
	case "hash":
		return nil, fmt.Errorf("%s: %s", sources["USERSYNC_PII_HASH"], pe.Reason)
	case "drop":
		return nil, fmt.Errorf("%s: %s", sources["USERSYNC_PII_DROP"], pe.Reason)
	}
	if c.PIIKey == "" {
		return nil, errors.New("USERSYNC_PII_HASH is set without USERSYNC_PII_KEY (or USERSYNC_PII_KEY_FILE): hashing needs a key of at least 32 bytes")
	}
	return nil, fmt.Errorf("%s %s (e.g. openssl rand -hex 32)", sources["USERSYNC_PII_KEY"], pe.Reason)
}

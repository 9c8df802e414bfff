// Package secret seals the secrets usersync stores in PostgreSQL (account
// credentials in the registry, OAuth tokens in oauth_tokens) with AES-256-GCM
// under a 32-byte key the database never holds, so a copy of the database
// alone reveals no credential.
//
// A sealed value names the id of its key, never the key, and is bound to
// where it is stored (Bind), so a value copied to another row or setting
// fails to open:
//
//	k, err := secret.ParseKey(os.Getenv("USERSYNC_SECRETS_KEY"))
//	bound := secret.Bind("acme", "USERSYNC_API_TOKEN")
//	sealed, err := k.Seal(bound, token)
//	plain, err := k.Open(bound, sealed)
//
// During a key rotation a Ring opens values sealed with either key.
package secret

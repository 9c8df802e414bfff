package config

import "github.com/usersync/usersync/sync/secret"

// secretsSettings are the settings of the key that seals the secrets
// stored in PostgreSQL (package secret): fleet-wide, since one worker opens
// every account's.
func secretsSettings() []Setting {
	return []Setting{
		{Env: "USERSYNC_SECRETS_KEY", Scope: FleetWide, Secret: true, Meaning: "the key that encrypts the secrets stored in PostgreSQL (AES-256-GCM): the registered accounts' API tokens and OAuth client secrets and refresh tokens, and every account's OAuth tokens in oauth_tokens. 32 bytes as 64 hex digits (openssl rand -hex 32) or base64; the database holds only its key id. Required to register an account with a secret; without it the default account's OAuth tokens are stored in clear, as before. To change it, usersync accounts rekey --old-key-file. Also read from USERSYNC_SECRETS_KEY_FILE.",
			set: func(c *Config, v string) error {
				if v == "" {
					c.SecretsKey = nil
					return nil
				}
				k, err := secret.ParseKey(v)
				if err != nil {
					return err
				}
				c.SecretsKey = k
				return nil
			}},
	}
}

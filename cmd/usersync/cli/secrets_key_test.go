package cli

// testSecretsKey is the USERSYNC_SECRETS_KEY of the tests' fleets.
const testSecretsKey = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

package cli

import "github.com/usersync/usersync/sync/warehouse/dsn"

// The connection string's redaction, under the names the commands use.
func redactDSN(s string) string            { return dsn.Redact(s) }
func redactErr(err error, s string) string { return dsn.RedactErr(err, s) }
func dsnHasPassword(s string) bool         { return dsn.HasPassword(s) }
func isURLDSN(s string) bool               { return dsn.IsURL(s) }
func parseErrorText(err error) string      { return dsn.ParseErrorText(err) }

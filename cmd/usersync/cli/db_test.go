package cli

import (
	"strings"
	"testing"

	"github.com/usersync/usersync/schema/schematest"
)

// TestPlaintextWarning runs commands in-process: one whose DATABASE_URL
// names a remote host without sslmode logs one warning naming the host and
// not the password (the connection itself fails: nothing listens there);
// one with the test's loopback URL logs none.
func TestPlaintextWarning(t *testing.T) {
	t.Parallel()
	_, _, errs := run(t, map[string]string{"DATABASE_URL": "postgres://u:pw-s3cr3t@192.0.2.1:5432/analytics?connect_timeout=1"}, "migrate")
	if strings.Count(errs, "go unencrypted") != 1 || !strings.Contains(errs, "level=WARN") || !strings.Contains(errs, "host=192.0.2.1") {
		t.Errorf("remote without sslmode: stderr %q", errs)
	}
	if strings.Contains(errs, "s3cr3t") {
		t.Errorf("the password shows: %q", errs)
	}
	_, _, errs = run(t, map[string]string{"DATABASE_URL": "postgres://u:pw@192.0.2.1:5432/analytics?connect_timeout=1&sslmode=require"}, "migrate")
	if strings.Contains(errs, "go unencrypted") {
		t.Errorf("remote with sslmode=require: stderr %q", errs)
	}
	pool := schematest.NewPool(t, 2)
	env := map[string]string{"DATABASE_URL": schematest.DatabaseURL(t), "USERSYNC_SCHEMA": schematest.NewSchemaName(t, pool), "USERSYNC_READER_ROLE": ""}
	if code, _, errs := run(t, env, "migrate"); code != ExitOK || strings.Contains(errs, "unencrypted") {
		t.Errorf("loopback: exit %d, stderr %q", code, errs)
	}
}

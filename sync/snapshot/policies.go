package snapshot

import (
	"context"
	"fmt"
	"io"
)

// WriteOlderPolicies says on w which snapshots of the warehouse in
// schemaName under dest were written under a personal-data policy other
// than the one of fingerprint fp (usersync pii apply's last lines).
func WriteOlderPolicies(ctx context.Context, w io.Writer, dest Destination, schemaName, fp string) error {
	ids, err := Manifests(ctx, dest, schemaName)
	if err != nil {
		return fmt.Errorf("listing snapshots: %w", err)
	}
	older := 0
	for _, id := range ids {
		m, err := ReadManifest(ctx, dest, schemaName, id)
		if err != nil {
			return err
		}
		if m.Policy == fp {
			continue
		}
		policy := m.Policy
		if policy == "" {
			policy = "not recorded (written before usersync recorded policies)"
		}
		fmt.Fprintf(w, "snapshot %s was written under an older policy: %s\n", id, policy)
		older++
	}
	if older > 0 {
		fmt.Fprintf(w, "%d snapshots hold values the current policy would not keep; retention ages them out, or see docs/operations.md (Personal data) to remove them sooner\n", older)
	}
	return nil
}

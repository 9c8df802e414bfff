package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// probeDir is the folder of Probe's objects in a deployment's folder. A
// hyphen keeps it outside the layout (no table is named so), which
// retention and the selection of snapshots never touch.
const probeDir = "_usersync-check"

// Probe writes a small object in the deployment folder of schemaName under
// dest and removes it, so that a destination usersync cannot write to (a
// folder it may not create, a bucket its credentials may not put to) shows
// before the first snapshot. It returns the deployment folder, for messages.
func Probe(ctx context.Context, dest Destination, schemaName string) (string, error) {
	d, err := inDeployment(dest, schemaName)
	if err != nil {
		return "", err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return d.String(), fmt.Errorf("drawing a probe name: %w", err)
	}
	name := probeDir + "/probe-" + hex.EncodeToString(rnd[:])
	obj, err := d.Create(ctx, name)
	if err != nil {
		return d.String(), fmt.Errorf("writing to %s: %w", d, err)
	}
	if _, err := obj.Write([]byte("usersync check\n")); err != nil {
		return d.String(), errors.Join(fmt.Errorf("writing to %s: %w", d, err), obj.Abort(ctx))
	}
	if err := obj.Commit(ctx); err != nil {
		return d.String(), fmt.Errorf("writing to %s: %w", d, err)
	}
	if err := d.Remove(ctx, Entry{Name: name}); err != nil {
		return d.String(), fmt.Errorf("removing the probe %s/%s: %w", d, name, err)
	}
	return d.String(), nil
}

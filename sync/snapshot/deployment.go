package snapshot

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/usersync/usersync/schema"
)

// deployment is the part of a destination that one deployment owns: the
// folder (or key prefix) named after its warehouse schema, "<root>/<schema>/".
// Names given to it and returned by it are relative to that folder, so the
// layout, the selection of the newest snapshot and retention work inside it
// and cannot see, pick or remove what another deployment wrote.
type deployment struct {
	root Destination
	ns   string // the warehouse schema
}

var _ Destination = deployment{}

// inDeployment returns the part of root that the deployment of schemaName
// owns.
func inDeployment(root Destination, schemaName string) (deployment, error) {
	if root == nil {
		return deployment{}, fmt.Errorf("no snapshot destination")
	}
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return deployment{}, fmt.Errorf("schema name: %w", err)
	}
	return deployment{root: root, ns: schemaName}, nil
}

// rootName is name as seen from the root.
func (d deployment) rootName(name string) string { return d.ns + "/" + name }

func (d deployment) Create(ctx context.Context, name string) (Object, error) {
	return d.root.Create(ctx, d.rootName(name))
}

func (d deployment) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return d.root.Open(ctx, d.rootName(name))
}

// List lists the deployment's folder; entries outside it (which a root's
// List matching by name prefix could return) are left out.
func (d deployment) List(ctx context.Context, prefix string) ([]Entry, error) {
	entries, err := d.root.List(ctx, d.rootName(prefix))
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e.Name, d.ns+"/"); ok {
			e.Name = name
			out = append(out, e)
		}
	}
	return out, nil
}

func (d deployment) Remove(ctx context.Context, e Entry) error {
	e.Name = d.rootName(e.Name)
	return d.root.Remove(ctx, e)
}

func (d deployment) SetCurrent(ctx context.Context, link, target string, files []string) error {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = d.rootName(f)
	}
	return d.root.SetCurrent(ctx, d.rootName(link), d.rootName(target), names)
}

// String names the deployment's folder, e.g. "/var/lib/usersync/snapshots/usersync".
func (d deployment) String() string { return strings.TrimRight(d.root.String(), "/") + "/" + d.ns }

// warnOldLayout warns, at each Write, while the root holds complete
// snapshots of the layout before deployment folders (<root>/_manifests/ and
// <root>/<table>/, written by earlier releases): no
// deployment removes them any more, since the old manifests do not say
// which deployment's folder they belong to (two deployments shared them);
// docs/operations.md says how to move or remove them.
func (w *Writer) warnOldLayout(ctx context.Context) {
	ids, err := manifestIDs(ctx, w.dest.root)
	if err != nil {
		w.log.WarnContext(ctx, "looking for snapshots without a deployment folder", "folder", w.dest.root.String(), "error", err)
		return
	}
	if len(ids) == 0 {
		return
	}
	w.log.WarnContext(ctx, "snapshots without a deployment folder are left untouched: retention does not remove them; "+
		"see docs/operations.md (Snapshots of an earlier layout) to move or remove them",
		"folder", w.dest.root.String(), "snapshots", len(ids), "oldest", ids[0], "newest", ids[len(ids)-1])
}

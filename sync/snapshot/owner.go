package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// markerName is the file in a deployment's folder that names who owns it;
// outside the layout (entryID), so retention never counts or removes it.
const markerName = "_owner.json"

// Owner names who writes a snapshot folder (the fleet, the database and the
// account), so that a writer removes only snapshots whose manifest or folder
// marker names it. The zero Owner owns every snapshot of its folder.
type Owner struct {
	Fleet    string `json:"fleet"`
	Database string `json:"database"`
	Account  string `json:"account"`
}

// IsZero reports whether o names nobody.
func (o Owner) IsZero() bool { return o == Owner{} }

// Is reports whether o and p are the same account of the same fleet in the
// same database: the same database name and, when both know it, the same
// cluster (as accounts.SameDatabase).
func (o Owner) Is(p Owner) bool {
	on, osys, _ := strings.Cut(o.Database, "@")
	pn, psys, _ := strings.Cut(p.Database, "@")
	return o.Fleet == p.Fleet && o.Account == p.Account && on == pn && (osys == "" || psys == "" || osys == psys)
}

func (o Owner) String() string {
	return fmt.Sprintf("account %s of fleet %s in database %s", o.Account, o.Fleet, o.Database)
}

// folderMarker is the content of markerName.
type folderMarker struct {
	Format int    `json:"format"`
	Schema string `json:"schema"`
	Owner
}

// ForeignFolderError is a folder whose marker names another owner: nothing
// in it is written or removed.
type ForeignFolderError struct {
	Folder      string
	Owner, Want Owner
}

func (e *ForeignFolderError) Error() string {
	return fmt.Sprintf("snapshot folder %s is %s (its %s), not %s", e.Folder, e.Owner, markerName, e.Want)
}

// FolderOwner reads the marker of the deployment folder of schemaName under
// root; ok is false when there is none.
func FolderOwner(ctx context.Context, root Destination, schemaName string) (o Owner, ok bool, err error) {
	d, err := inDeployment(root, schemaName)
	if err != nil {
		return o, false, err
	}
	entries, err := d.List(ctx, markerName)
	if err != nil {
		return o, false, fmt.Errorf("listing %s: %w", d, err)
	}
	return readMarker(ctx, d, entries)
}

// readMarker reads d's marker when entries (a listing of d) hold it.
func readMarker(ctx context.Context, d deployment, entries []Entry) (Owner, bool, error) {
	found := false
	for _, e := range entries {
		found = found || (e.Name == markerName && !e.Partial)
	}
	if !found {
		return Owner{}, false, nil
	}
	r, err := d.Open(ctx, markerName)
	if err != nil {
		return Owner{}, false, fmt.Errorf("reading %s/%s: %w", d, markerName, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return Owner{}, false, fmt.Errorf("reading %s/%s: %w", d, markerName, err)
	}
	var m folderMarker
	if err := json.Unmarshal(data, &m); err != nil || m.Schema != d.ns || m.IsZero() {
		return Owner{}, false, fmt.Errorf("%s/%s is not a usersync folder marker of schema %s", d, markerName, d.ns)
	}
	return m.Owner, true, nil
}

// MarkFolder records o as the owner of the deployment folder of schemaName
// under root, unless it is recorded already; a folder marked as another's
// is a *ForeignFolderError.
func MarkFolder(ctx context.Context, root Destination, schemaName string, o Owner) error {
	d, err := inDeployment(root, schemaName)
	if err != nil {
		return err
	}
	got, ok, err := FolderOwner(ctx, root, schemaName)
	switch {
	case err != nil:
		return err
	case ok && got.Is(o):
		return nil
	case ok:
		return &ForeignFolderError{Folder: d.String(), Owner: got, Want: o}
	}
	return writeMarker(ctx, d, o)
}

func writeMarker(ctx context.Context, d deployment, o Owner) error {
	data, err := json.MarshalIndent(folderMarker{Format: 1, Schema: d.ns, Owner: o}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", markerName, err)
	}
	obj, err := d.Create(ctx, markerName)
	if err != nil {
		return fmt.Errorf("creating %s/%s: %w", d, markerName, err)
	}
	if _, err := obj.Write(append(data, '\n')); err != nil {
		_ = obj.Abort(ctx) // the write error is the one worth reporting
		return fmt.Errorf("writing %s/%s: %w", d, markerName, err)
	}
	if err := obj.Commit(ctx); err != nil {
		return fmt.Errorf("committing %s/%s: %w", d, markerName, err)
	}
	return nil
}

// ownership is what proves a folder's snapshots the writer's.
type ownership struct {
	anyone bool            // no Owner was given: all are, as before owners were recorded
	folder bool            // the folder's marker names the Owner: all are, legacy manifests included
	mine   map[string]bool // otherwise: the snapshots whose manifest names the Owner
	legacy int             // and how many manifests name nobody (an earlier release's), left alone
}

// ours reports whether the files of snapshot id may be removed; complete
// says whether it has a committed manifest (else it is a failed or
// running one, proven only by the folder's marker).
func (o ownership) ours(id string, complete bool) bool {
	return o.anyone || o.folder || (complete && o.mine[id])
}

// proveOwnership reads who owns d given its listing: a folder marked as
// another's is a *ForeignFolderError; without a marker, each committed
// manifest is read for its owner.
func proveOwnership(ctx context.Context, d deployment, entries []Entry, want Owner) (ownership, error) {
	if want.IsZero() {
		return ownership{anyone: true}, nil
	}
	got, ok, err := readMarker(ctx, d, entries)
	switch {
	case err != nil:
		return ownership{}, err
	case ok && got.Is(want):
		return ownership{folder: true}, nil
	case ok:
		return ownership{}, &ForeignFolderError{Folder: d.String(), Owner: got, Want: want}
	}
	own := ownership{mine: map[string]bool{}}
	for _, id := range completeIDs(entries) {
		m, err := readManifest(ctx, d, id)
		switch {
		case err != nil:
			continue // unreadable: proves nothing
		case m.Owner().IsZero():
			own.legacy++
		default:
			own.mine[id] = m.Owner().Is(want)
		}
	}
	return own, nil
}

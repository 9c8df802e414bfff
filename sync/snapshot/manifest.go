package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"
)

// ManifestFormat is the version of the manifest's JSON layout.
const ManifestFormat = 1

// Manifest describes one complete snapshot. It is stored as
// <schema>/_manifests/<id>.json under the snapshot root and written last: a
// snapshot without a manifest is incomplete and readers ignore it.
type Manifest struct {
	Format         int             `json:"format"`          // ManifestFormat
	ID             string          `json:"id"`              // e.g. 20261122T101500Z
	Schema         string          `json:"schema"`          // the warehouse schema that was read: the deployment, and the folder under the root
	CatalogVersion int             `json:"catalog_version"` // schema.Version of the writer
	Watermark      *time.Time      `json:"watermark"`       // the users stream's watermark; null if none yet
	StartedAt      time.Time       `json:"started_at"`
	FinishedAt     time.Time       `json:"finished_at"`
	Compression    Compression     `json:"compression"`
	Tables         []TableManifest `json:"tables"`
	// Changes marks the warehouse's content at the read (see readChanges):
	// a later snapshot with the same mark would hold the same rows.
	Changes string `json:"changes,omitempty"`
	// Policy is the personal-data policy in force when it was written
	// (Options.Policy: names and key id only); empty for snapshots written
	// before usersync recorded it.
	Policy string `json:"pii_policy,omitempty"`
	// Fleet, Database and Account name the writer (Options.Owner): only
	// its own snapshots are removed. Empty in snapshots of earlier
	// releases.
	Fleet    string `json:"fleet,omitempty"`
	Database string `json:"database,omitempty"`
	Account  string `json:"account,omitempty"`
}

// Owner is who wrote the snapshot; zero for an earlier release's.
func (m Manifest) Owner() Owner {
	return Owner{Fleet: m.Fleet, Database: m.Database, Account: m.Account}
}

// TableManifest is one table of a snapshot.
type TableManifest struct {
	Name  string         `json:"name"`
	Rows  int64          `json:"rows"`
	Bytes int64          `json:"bytes"`
	Files []FileManifest `json:"files"`
}

// FileManifest is one Parquet file of a table.
type FileManifest struct {
	Path  string `json:"path"` // relative to the snapshot root, e.g. usersync/users/20261122T101500Z/part-00000.parquet
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// Table returns the named table of the snapshot.
func (m Manifest) Table(name string) (TableManifest, bool) {
	for _, t := range m.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return TableManifest{}, false
}

// Rows is the number of rows of every table together.
func (m Manifest) Rows() int64 {
	var n int64
	for _, t := range m.Tables {
		n += t.Rows
	}
	return n
}

// Manifests returns the ids of the complete snapshots that the deployment
// of the warehouse schema schemaName wrote under dest, the snapshot root,
// oldest first. Other deployments' snapshots, and those of the layout before
// deployment folders, are not among them.
func Manifests(ctx context.Context, dest Destination, schemaName string) ([]string, error) {
	d, err := inDeployment(dest, schemaName)
	if err != nil {
		return nil, err
	}
	return manifestIDs(ctx, d)
}

// manifestIDs returns the ids of the complete snapshots in d, oldest first.
func manifestIDs(ctx context.Context, d Destination) ([]string, error) {
	entries, err := d.List(ctx, manifestDir+"/")
	if err != nil {
		return nil, err
	}
	return completeIDs(entries), nil
}

// completeIDs returns the ids of the committed manifests among entries,
// oldest first.
func completeIDs(entries []Entry) []string {
	var ids []string
	for _, e := range entries {
		if id, manifest, ok := entryID(e.Name); ok && manifest && !e.Partial && e.Name == manifestName(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Latest returns the manifest of the newest complete snapshot of the
// deployment of schemaName under dest, or ErrNoSnapshot. Snapshots dated
// more than maxSkew after the clock are not taken for the newest (futureIDs).
func Latest(ctx context.Context, dest Destination, schemaName string) (Manifest, error) {
	d, err := inDeployment(dest, schemaName)
	if err != nil {
		return Manifest{}, err
	}
	entries, err := d.List(ctx, manifestDir+"/")
	if err != nil {
		return Manifest{}, err
	}
	ids := currentIDs(entries, futureIDs(entries, time.Now()))
	if len(ids) == 0 {
		return Manifest{}, ErrNoSnapshot
	}
	return readManifest(ctx, d, ids[len(ids)-1])
}

// ReadManifest reads the manifest of snapshot id of the deployment of
// schemaName under dest.
func ReadManifest(ctx context.Context, dest Destination, schemaName, id string) (Manifest, error) {
	d, err := inDeployment(dest, schemaName)
	if err != nil {
		return Manifest{}, err
	}
	return readManifest(ctx, d, id)
}

// readManifest reads the manifest of snapshot id in d and checks that the
// deployment of d's schema wrote it (its files are listed relative to the
// root, under the schema's folder).
func readManifest(ctx context.Context, d deployment, id string) (Manifest, error) {
	if !validID(id) {
		return Manifest{}, fmt.Errorf("invalid snapshot id %q", id)
	}
	r, err := d.Open(ctx, manifestName(id))
	if err != nil {
		return Manifest{}, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return Manifest{}, fmt.Errorf("reading manifest %s: %w", id, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("decoding manifest %s: %w", id, err)
	}
	if m.Format != ManifestFormat {
		return Manifest{}, fmt.Errorf("manifest %s has format %d; this build reads format %d", id, m.Format, ManifestFormat)
	}
	if m.Schema != d.ns {
		return Manifest{}, fmt.Errorf("manifest %s in %s was written by the deployment of schema %q, not %q", id, d, m.Schema, d.ns)
	}
	return m, nil
}

// writeManifest stores m, which publishes the snapshot.
func writeManifest(ctx context.Context, dest Destination, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	obj, err := dest.Create(ctx, manifestName(m.ID))
	if err != nil {
		return fmt.Errorf("creating manifest: %w", err)
	}
	if _, err := obj.Write(append(data, '\n')); err != nil {
		_ = obj.Abort(ctx) // the write error is the one worth reporting
		return fmt.Errorf("writing manifest: %w", err)
	}
	if err := obj.Commit(ctx); err != nil {
		return fmt.Errorf("committing manifest: %w", err)
	}
	return nil
}

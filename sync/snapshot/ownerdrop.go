package snapshot

import (
	"context"
	"log/slog"
)

// claim proves who owns the writer's folder (proveOwnership), marking it
// the Owner's when it holds nothing of the layout yet; a folder proven only
// snapshot by snapshot is logged once.
func (w *Writer) claim(ctx context.Context, existing []Entry) (ownership, error) {
	owner, err := w.owner(ctx)
	if err != nil {
		return ownership{}, err
	}
	own, err := proveOwnership(ctx, w.dest, existing, owner)
	if err != nil || own.anyone || own.folder {
		return own, err
	}
	empty := true
	for _, e := range existing {
		if _, _, ok := entryID(e.Name); ok {
			empty = false
		}
	}
	if empty {
		if err := writeMarker(ctx, w.dest, owner); err != nil {
			return own, err
		}
		return ownership{folder: true}, nil
	}
	w.unproven.Do(func() {
		w.log.WarnContext(ctx, "the snapshot folder has no marker naming this fleet: retention removes only the snapshots "+
			"whose manifest names it, and leaves failed snapshots' files and an earlier release's snapshots; "+
			"usersync migrate marks it (docs/operations.md, Upgrading)", "folder", w.dest.String(), "earlier_release_snapshots", own.legacy)
	})
	return own, nil
}

// owner is Options.Owner, its Database filled by Options.Database.
func (w *Writer) owner(ctx context.Context) (Owner, error) {
	w.ownerMu.Lock()
	defer w.ownerMu.Unlock()
	if !w.opts.Owner.IsZero() && w.opts.Owner.Database == "" && w.opts.Database != nil {
		db, err := w.opts.Database(ctx)
		if err != nil {
			return Owner{}, err
		}
		w.opts.Owner.Database = db
	}
	return w.opts.Owner, nil
}

// DropFolder removes o's snapshots of schemaName's folder under root: all of
// them and then the marker when the marker names o, else only those whose
// manifest names o (left counts the rest). A folder marked as another's is a
// *ForeignFolderError, and nothing is removed.
func DropFolder(ctx context.Context, root Destination, schemaName string, o Owner, log *slog.Logger) (removed, left int, err error) {
	d, err := inDeployment(root, schemaName)
	if err != nil {
		return 0, 0, err
	}
	entries, err := d.List(ctx, "")
	if err != nil {
		return 0, 0, err
	}
	own, err := proveOwnership(ctx, d, entries, o)
	if err != nil {
		return 0, 0, err
	}
	committed := map[string]bool{}
	for _, id := range completeIDs(entries) {
		committed[id] = true
	}
	var marker *Entry
	for i, e := range entries {
		id, _, ok := entryID(e.Name)
		switch {
		case e.Name == markerName && !e.Partial:
			marker = &entries[i]
			continue
		case own.anyone || own.folder || (ok && own.ours(id, committed[id])):
		case e.Target != "" && own.ours(e.Target, committed[e.Target]): // a stable link to a snapshot removed here
		default:
			left++
			continue
		}
		if err := d.Remove(ctx, e); err != nil {
			return removed, left, err
		}
		removed++
	}
	if marker != nil && left == 0 {
		if err := d.Remove(ctx, *marker); err != nil {
			return removed, left, err
		}
		removed++
	}
	if left > 0 && log != nil {
		log.WarnContext(ctx, "snapshot files not proven this account's were left", "folder", d.String(), "files", left)
	}
	return removed, left, nil
}

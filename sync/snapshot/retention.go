package snapshot

import (
	"context"
	"log/slog"
	"slices"
	"time"
)

// tidy runs after snapshot id is published. It removes, from the entries
// listed before the snapshot started:
//
//  1. the manifests of complete snapshots beyond the newest Options.Keep,
//     so that readers stop seeing them first;
//  2. their files, and every other entry of the layout that no kept
//     manifest lists: folders of snapshots that failed or crashed before
//     their manifest, temporary files, unfinished uploads.
//
// The snapshot just written (id) is always kept, and so are the snapshots
// set aside as dated in the future (futureIDs), those a stable link still
// points to because it could not be switched (pinned), and whatever own does not
// prove the writer's (another fleet's snapshots, or an earlier release's in
// a folder without the writer's marker). A snapshot whose
// manifest could not be removed keeps its files. Failures are logged, not
// returned: the snapshot is published, and the next Write tries again. The
// Write's lock guarantees that no other writer owns what is removed.
func (w *Writer) tidy(ctx context.Context, existing []Entry, future, pinned map[string]bool, id string, own ownership, log *slog.Logger) {
	complete := append(slices.DeleteFunc(currentIDs(existing, future), func(c string) bool { return !own.ours(c, true) }), id)
	slices.Sort(complete)
	complete = slices.Compact(complete)
	kept := keptIDs(complete, w.opts.Keep, w.opts.KeepDaily, w.now())
	kept[id] = true
	for f := range future {
		kept[f] = true // set aside, not ours to age out while it is dated ahead of the clock
	}
	for p := range pinned {
		kept[p] = true // a stable link still points there
	}
	w.tidyLinks(ctx, existing, kept, log)
	committed := map[string]bool{}
	for _, c := range completeIDs(existing) {
		committed[c] = true
	}
	stuck := map[string]bool{} // pruned snapshots whose manifest is still there
	pruned, cleaned := 0, 0
	for _, e := range existing {
		if sid, ok := committedManifest(e); ok && !kept[sid] && own.ours(sid, true) {
			if err := w.dest.Remove(ctx, e); err != nil {
				log.WarnContext(ctx, "removing an old snapshot's manifest", "file", e.Name, "error", err)
				stuck[sid] = true
				continue
			}
			pruned++
		}
	}
	for _, e := range existing {
		sid, _, ok := entryID(e.Name)
		if _, manifest := committedManifest(e); !ok || manifest || stuck[sid] || (kept[sid] && !e.Partial) || !own.ours(sid, committed[sid]) {
			continue
		}
		if err := w.dest.Remove(ctx, e); err != nil {
			log.WarnContext(ctx, "removing an old snapshot's file", "file", e.Name, "error", err)
			continue
		}
		cleaned++
	}
	if pruned > 0 || cleaned > 0 {
		log.InfoContext(ctx, "old snapshots removed", "snapshots", pruned, "files", cleaned, "keep", w.opts.Keep,
			"keep_daily", w.opts.KeepDaily.String())
	}
}

// keptIDs returns which of the complete snapshot ids (sorted, oldest first)
// retention keeps: the newest keep, and the newest of each UTC day younger
// than daily.
func keptIDs(complete []string, keep int, daily time.Duration, now time.Time) map[string]bool {
	kept := map[string]bool{}
	for _, k := range complete[max(0, len(complete)-keep):] {
		kept[k] = true
	}
	if daily <= 0 {
		return kept
	}
	since := now.Add(-daily)
	newestOfDay := map[string]string{}
	for _, id := range complete {
		at, err := time.Parse(idLayout, id[:len(idLayout)])
		if err != nil || at.Before(since) {
			continue
		}
		newestOfDay[id[:8]] = id // sorted: the last one of a day wins
	}
	for _, id := range newestOfDay {
		kept[id] = true
	}
	return kept
}

// committedManifest reports whether e is a committed manifest, and its id.
func committedManifest(e Entry) (string, bool) {
	id, manifest, ok := entryID(e.Name)
	return id, ok && manifest && !e.Partial && e.Name == manifestName(id)
}

package snapshot

import (
	"context"
	"log/slog"
	"path"
)

// Stable paths (see "Stable paths" in doc.go): after the manifest publishes
// a snapshot, each of its tables' <table>/current is pointed at it, so that
// a reader naming <table>/current/*.parquet always reads the newest
// complete snapshot.

// setCurrent points each table of m at m's folder. A table it cannot switch
// is logged and keeps its previous target, which it returns so retention
// keeps that snapshot (pinned); the next Write tries again.
func (w *Writer) setCurrent(ctx context.Context, m Manifest, existing []Entry, log *slog.Logger) map[string]bool {
	pinned := map[string]bool{}
	for _, tm := range m.Tables {
		link := tm.Name + "/" + currentName
		files := make([]string, len(tm.Files))
		for i := range tm.Files {
			files[i] = partName(tm.Name, m.ID, i)
		}
		if err := w.dest.SetCurrent(ctx, link, tm.Name+"/"+m.ID, files); err != nil {
			log.WarnContext(ctx, "pointing a table's stable path at the new snapshot", "table", tm.Name, "error", err)
			for _, e := range existing {
				if e.Name == link && e.Target != "" {
					pinned[e.Target] = true
				}
			}
		}
	}
	return pinned
}

// refreshCurrent points the stable paths at last, the newest complete
// snapshot, where they do not show it yet: a Write that skipped an
// unchanged snapshot still sets them up (after an upgrade) or repairs them
// (after a switch that failed).
func (w *Writer) refreshCurrent(ctx context.Context, last Manifest, existing []Entry) {
	stale := last
	stale.Tables = nil
	for _, tm := range last.Tables {
		if !showsCurrent(existing, tm, last.ID) {
			stale.Tables = append(stale.Tables, tm)
		}
	}
	if len(stale.Tables) > 0 {
		w.setCurrent(ctx, stale, existing, w.log.With("snapshot", last.ID))
	}
}

// showsCurrent reports whether the entries show table tm of snapshot id at
// its stable path: a link to id, or copies of the same names and sizes.
func showsCurrent(entries []Entry, tm TableManifest, id string) bool {
	link := tm.Name + "/" + currentName
	want := map[string]int64{}
	for _, f := range tm.Files {
		want[link+"/"+path.Base(f.Path)] = f.Bytes
	}
	copies := 0
	for _, e := range entries {
		switch {
		case e.Name == link && e.Target != "":
			return e.Target == id
		case path.Dir(e.Name) != link:
		case e.Partial:
			return false
		default:
			if size, ok := want[e.Name]; !ok || size != e.Size {
				return false
			}
			copies++
		}
	}
	return copies == len(want)
}

// tidyLinks removes the temporary links a crashed switch left, and the
// stable links of tables no longer written whose snapshot retention removes
// (they would point at nothing).
func (w *Writer) tidyLinks(ctx context.Context, existing []Entry, kept map[string]bool, log *slog.Logger) {
	written := map[string]bool{}
	for _, t := range w.tables {
		written[t.Name] = true
	}
	for _, e := range existing {
		if e.Target == "" || (!e.Partial && (written[path.Dir(e.Name)] || kept[e.Target])) {
			continue
		}
		if err := w.dest.Remove(ctx, e); err != nil {
			log.WarnContext(ctx, "removing a stale stable link", "file", e.Name, "error", err)
		}
	}
}

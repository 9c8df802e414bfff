package snapshot

import (
	"context"
	"slices"
	"time"
)

// maxSkew is how far ahead of the writer's clock a complete snapshot's id
// may lie and still be taken for the newest: another replica's clock a little
// ahead. A new snapshot then takes that second (with the next suffix), so it
// still sorts last. A snapshot dated further ahead (written while a clock was
// wrong, or copied in) is set aside (see futureIDs).
const maxSkew = 5 * time.Minute

// futureIDs returns the complete snapshots among entries whose id lies more
// than maxSkew after now. They are not taken for the newest (naming,
// WriteChanged's comparison, Latest) and retention neither counts nor
// removes them; each Write warns about them. Refusing them to sort first kept
// every later snapshot from being written until someone removed them by hand.
// Once the clock passes them they are ordinary snapshots again.
func futureIDs(entries []Entry, now time.Time) map[string]bool {
	limit := now.Add(maxSkew)
	future := map[string]bool{}
	for _, id := range completeIDs(entries) {
		at, err := time.Parse(idLayout, id[:len(idLayout)])
		if err == nil && at.After(limit) {
			future[id] = true
		}
	}
	return future
}

// currentIDs returns the complete snapshots among entries that are not in
// future, oldest first.
func currentIDs(entries []Entry, future map[string]bool) []string {
	return slices.DeleteFunc(completeIDs(entries), func(id string) bool { return future[id] })
}

// warnFuture logs the snapshots set aside as dated in the future.
func (w *Writer) warnFuture(ctx context.Context, future map[string]bool, now time.Time) {
	if len(future) == 0 {
		return
	}
	ids := make([]string, 0, len(future))
	for id := range future {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.log.WarnContext(ctx, "snapshots dated after the clock are set aside: they are not taken for the newest, and retention "+
		"leaves them; remove them if they were copied in or written while the clock was ahead (docs/operations.md, Snapshots dated in the future)",
		"folder", w.dest.String(), "snapshots", ids, "now", now.UTC().Format(idLayout))
}

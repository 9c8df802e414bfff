// Package normalize turns API resources into typed warehouse rows, following
// the catalog (package schema). It is pure (no I/O, no clock, no logging), so
// the same rows come out of a page however it was fetched.
//
// A value that cannot be typed is a *FieldError naming the attribute and the
// reason, never the value itself, because values may be personal data: the
// caller quarantines that resource and goes on with the page.
//
//	n := normalize.New(schema.User())
//	n.SetPolicy(policy) // hash or drop personal attributes; nil keeps them
//	for _, r := range doc.Data {
//		row, err := n.Row(r)
//		var fe *normalize.FieldError
//		if errors.As(err, &fe) {
//			quarantine(r, fe)
//			continue
//		}
//		rows = append(rows, row)
//	}
//
// For whole users pages, Normalizer.DecodeData types the resources while the
// client decodes the body (jsonapi.Pages.DecodeData) and returns a *Page.
package normalize

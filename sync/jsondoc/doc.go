// Package jsondoc holds the JSON:API document types (Document, Resource,
// Relationship, Linkage, ID, ErrorObject) and their decoding, apart from the
// HTTP client, so that normalize types resources without knowing how they
// were fetched. The client (sync/jsonapi) decodes each response body with
// Decode or DecodeWith.
//
//	doc, err := jsondoc.Decode(body) // a *jsondoc.DecodeError, which never echoes the body
//	if err != nil {
//		return err
//	}
//	for _, r := range doc.Data {
//		if !r.ID.Valid() {
//			quarantine(r.Raw) // an id that is not an integer: the resource kept whole
//			continue
//		}
//		role, ok := r.Relationships["role"].Data.One()
//		_, _ = role, ok
//	}
//
// Decoding keeps what the API may add: attributes and meta stay raw JSON,
// and the four forms of a relationship's data (absent, null, one, many) stay
// apart (Linkage.Shape), because a linkage not sent must keep the stored
// value while a null one clears it. The package imports nothing of usersync
// but sync/internal/jsonscan.
package jsondoc

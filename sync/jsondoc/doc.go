// Package jsondoc holds the JSON:API document types (Document, Resource,
// Relationship, Linkage, ID, ErrorObject) and their decoding, apart from the
// HTTP client: normalize types resources from them without knowing how they
// were fetched, and the client (sync/jsonapi) decodes each response body with
// Decode or DecodeWith.
//
// Decoding keeps what the API may add: attributes and meta stay raw JSON,
// the four forms of a relationship's data (absent, null, one, many) stay
// apart (Shape), and an id that is not an integer decodes as InvalidID with
// the resource kept whole (Resource.Raw) for quarantine instead of failing
// the page. Every error is a *DecodeError that never echoes the body.
//
// It imports nothing of usersync but sync/internal/jsonscan.
package jsondoc

package syncer

import (
	"encoding/json"

	"github.com/usersync/usersync/sync/jsondoc"
)

// resourceJSON re-encodes a resource as the API sent it (id, type,
// attributes, relationship linkage and links, meta), for quarantine.
func resourceJSON(r jsondoc.Resource) []byte {
	type ident struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	rels := map[string]map[string]any{}
	for name, rel := range r.Relationships {
		m := map[string]any{}
		switch rel.Data.Shape {
		case jsondoc.ShapeNull:
			m["data"] = nil
		case jsondoc.ShapeOne:
			m["data"] = ident{int64(rel.Data.IDs[0].ID), rel.Data.IDs[0].Type}
		case jsondoc.ShapeMany:
			ids := make([]ident, len(rel.Data.IDs))
			for i, id := range rel.Data.IDs {
				ids[i] = ident{int64(id.ID), id.Type}
			}
			m["data"] = ids
		}
		if rel.Links.Related != "" {
			m["links"] = map[string]string{"related": string(rel.Links.Related)}
		}
		rels[name] = m
	}
	doc := map[string]any{"id": int64(r.ID), "type": r.Type, "relationships": rels}
	if len(r.Attributes) > 0 {
		doc["attributes"] = json.RawMessage(r.Attributes)
	}
	if len(r.Meta) > 0 {
		doc["meta"] = json.RawMessage(r.Meta)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		// Attributes or meta were not valid JSON: keep them as strings.
		doc["attributes"], doc["meta"] = string(r.Attributes), string(r.Meta)
		b, _ = json.Marshal(doc)
	}
	return b
}

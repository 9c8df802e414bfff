package normalize_test

import (
	"errors"
	"fmt"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/jsondoc"
	"github.com/usersync/usersync/sync/normalize"
)

// ExampleNormalizer_Row types two users of a page for the warehouse: the
// first keeps an attribute the catalog does not know, the second is refused
// for a value of the wrong JSON type, naming the attribute but not the value.
func ExampleNormalizer_Row() {
	doc, err := jsondoc.Decode([]byte(`{"data": [
		{"type": "user", "id": 7, "attributes": {"email": "ada@example.com", "locked": false,
			"updatedAt": "2026-11-22T10:15:00.000Z", "languagePreference": "fr"},
		 "relationships": {"role": {"data": {"type": "role", "id": 3}},
			"teams": {"data": [{"type": "team", "id": 1}, {"type": "team", "id": 2}]}}},
		{"type": "user", "id": 8, "attributes": {"locked": "no", "updatedAt": "2026-11-22T10:16:00.000Z"}}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	n := normalize.New(schema.User())
	for _, r := range doc.Data {
		row, err := n.Row(r)
		var fe *normalize.FieldError
		if errors.As(err, &fe) {
			fmt.Printf("user %d quarantined: %v\n", r.ID, fe)
			continue
		}
		// ToOne[0] is the role: the catalog's first to-one relationship.
		fmt.Printf("user %d updated %s, role %d, teams %v, unknown %v, kept %s\n",
			row.ID, row.UpdatedAt.Format("2006-01-02 15:04"), row.ToOne[0].ID, row.Teams, row.Unknown, row.Raw)
	}
	// Output:
	// user 7 updated 2026-11-22 10:15, role 3, teams [1 2], unknown [languagePreference], kept {"languagePreference":"fr"}
	// user 8 quarantined: locked: expected boolean, got string
}

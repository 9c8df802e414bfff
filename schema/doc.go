// Package schema is the catalog: one declaration per API resource (its
// attributes, JSON types, limits and meanings, and its relationships), the
// column naming rule, the PostgreSQL and Arrow types that follow from it,
// and the embedded SQL migrations of the warehouse. Everything else derives
// from, or is tested against, this package, so it imports no other package
// of the project.
//
//	for _, a := range schema.User().Attributes {
//		fmt.Println(a.Name, schema.ColumnName(a.Name)) // "updatedAt updated_at"
//	}
//	t, ok := schema.TableNamed("users")
//	arrowSchema := schema.ArrowSchema(t)
//	migrations, err := schema.Migrations("usersync")
package schema

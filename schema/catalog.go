package schema

import (
	"slices"
	"strings"
)

// Version is the catalog's version. It is written into every Parquet snapshot
// and bumps whenever a migration changes the warehouse's shape.
const Version = 4

// JSONType is the JSON type the API documents for an attribute. Every attribute
// is also nullable.
type JSONType int

// The JSON types of spec §2.1.
const (
	Integer JSONType = iota + 1
	Boolean
	String
	DateTime
	Object
)

// String returns the type's name as the spec writes it.
func (t JSONType) String() string {
	switch t {
	case Integer:
		return "integer"
	case Boolean:
		return "boolean"
	case String:
		return "string"
	case DateTime:
		return "datetime"
	case Object:
		return "object"
	}
	return "unknown"
}

// PostgresType is the column type the warehouse stores the JSON type as.
func (t JSONType) PostgresType() string {
	switch t {
	case Integer:
		return "bigint"
	case Boolean:
		return "boolean"
	case String:
		return "text"
	case DateTime:
		return "timestamptz"
	case Object:
		return "jsonb"
	}
	panic("schema: unknown JSON type") // programmer error: every type is listed above
}

// Attribute is one attribute of a resource.
type Attribute struct {
	Name      string   // the API's name, e.g. "accountsViewId"
	Type      JSONType // documented JSON type; every attribute is nullable
	MaxLength int      // maximum length in characters for strings; 0 = not limited
	Enum      []string // allowed values, when the spec lists them
	Format    string   // "email" where the spec names a format
	Meaning   string   // what the value means, from the spec
	// Personal says the value identifies a person or is what they wrote
	// (email, names, phone numbers): usersync forget clears it.
	Personal bool
}

// Column is the attribute's column name in the warehouse.
func (a Attribute) Column() string { return ColumnName(a.Name) }

// Relationship is one relationship of a resource.
type Relationship struct {
	Name        string // the API's name, e.g. "teams"
	ToMany      bool   // an array of identifiers rather than one
	RelatedType string // the type of the related resources
	Meaning     string
	Filterable  bool // filter[<name>][id] is allowed
	// OwnTable says the linkage is kept in a table of its own (the users'
	// teams, in user_teams) rather than in an array column of the resource.
	OwnTable bool
}

// Column is the relationship's column: the foreign key of a to-one
// relationship (e.g. role_id), the bigint[] of ids of a to-many one kept in
// the resource's row (e.g. mailbox_ids).
func (r Relationship) Column() string {
	if r.ToMany {
		return ColumnName(singular(r.Name)) + "_ids"
	}
	return ColumnName(r.Name) + "_id"
}

// singular is the English singular of a relationship name, enough for the
// API's plural names: mailboxes → mailbox, contentCategories →
// contentCategory, recipients → recipient.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies"):
		return name[:len(name)-3] + "y"
	case strings.HasSuffix(name, "xes"), strings.HasSuffix(name, "ches"), strings.HasSuffix(name, "shes"), strings.HasSuffix(name, "sses"):
		return name[:len(name)-2]
	case strings.HasSuffix(name, "s"):
		return name[:len(name)-1]
	}
	return name
}

// Resource is one API resource type mirrored into a warehouse table.
type Resource struct {
	Type          string // the JSON:API type, e.g. "user"
	Path          string // the collection path under /api/v2, e.g. "users"
	Table         string // the warehouse table, e.g. "users"
	Meaning       string
	Attributes    []Attribute
	Relationships []Relationship
}

// Attribute returns the attribute with the given API name.
func (r Resource) Attribute(name string) (Attribute, bool) {
	for _, a := range r.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

// ToOne returns the to-one relationships that the table stores as foreign-key
// columns, in declaration order.
func (r Resource) ToOne() []Relationship {
	var out []Relationship
	for _, rel := range r.Relationships {
		if !rel.ToMany {
			out = append(out, rel)
		}
	}
	return out
}

// ToMany returns the to-many relationships, in declaration order.
func (r Resource) ToMany() []Relationship {
	var out []Relationship
	for _, rel := range r.Relationships {
		if rel.ToMany {
			out = append(out, rel)
		}
	}
	return out
}

// ArrayLinks returns the to-many relationships kept as bigint[] columns of
// the resource's table, in catalog order: every to-many one without a table
// of its own.
func (r Resource) ArrayLinks() []Relationship {
	var out []Relationship
	for _, rel := range r.Relationships {
		if rel.ToMany && !rel.OwnTable {
			out = append(out, rel)
		}
	}
	return out
}

// RelationshipsTo returns the relationships whose related type is one of
// types, in declaration order.
func (r Resource) RelationshipsTo(types ...string) []Relationship {
	var out []Relationship
	for _, rel := range r.Relationships {
		if slices.Contains(types, rel.RelatedType) {
			out = append(out, rel)
		}
	}
	return out
}

// Dimensions returns the small resources users link to and each sync lists
// in full: team, role and profile. It is the one list of dimensions: tables,
// history, snapshots, the sync, the simulator and dbt all read it.
func Dimensions() []Resource {
	return []Resource{Team(), Role(), Profile()}
}

// DimensionTypes returns the types of the dimensions: team, role and profile.
func DimensionTypes() []string {
	var out []string
	for _, r := range Dimensions() {
		out = append(out, r.Type)
	}
	return out
}

// DimensionLinks returns the user's relationships to teams, roles and
// profiles, in declaration order.
func DimensionLinks() []Relationship {
	return User().RelationshipsTo(DimensionTypes()...)
}

// Resources returns the catalog: user, team, role and profile.
func Resources() []Resource {
	return append([]Resource{User()}, Dimensions()...)
}

// ReadScopes returns the OAuth scopes that read every resource of the
// catalog: "users.read teams.read roles.read profiles.read".
func ReadScopes() string {
	var out []string
	for _, r := range Resources() {
		out = append(out, r.Path+".read")
	}
	return strings.Join(out, " ")
}

// ColumnName turns an API attribute name into a column name: an underscore
// before each upper-case letter, then lower case ("accountsViewId" becomes
// "accounts_view_id", "custom1" stays "custom1").
func ColumnName(name string) string {
	var b strings.Builder
	b.Grow(len(name) + 4)
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

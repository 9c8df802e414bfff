package schema

import (
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
)

// Arrow metadata keys written by usersync.
const (
	MetaMeaning        = "usersync.meaning"         // field metadata: the column's meaning
	MetaCatalogVersion = "usersync.catalog_version" // schema metadata: Version
	MetaTable          = "usersync.table"           // schema metadata: the table name
)

// Arrow's canonical JSON extension type: a utf8 field whose metadata names it
// holds JSON text. ArrowSchema marks jsonb columns with it (as metadata on a
// plain utf8 field, so no extension type needs registering), and snapshots
// write those columns with Parquet's JSON logical type.
const (
	MetaExtensionName = "ARROW:extension:name" // field metadata: the extension type
	JSONExtension     = "arrow.json"           // its value for JSON text
)

// ArrowType is the Arrow type a PostgreSQL column type is written as in
// snapshots: bigint int64, boolean bool, text utf8, timestamptz timestamp[us,
// UTC], jsonb utf8 holding JSON, bytea binary, and arrays lists of those.
func ArrowType(pgType string) arrow.DataType {
	switch pgType {
	case "bigint":
		return arrow.PrimitiveTypes.Int64
	case "boolean":
		return arrow.FixedWidthTypes.Boolean
	case "text", "jsonb":
		return arrow.BinaryTypes.String
	case "timestamptz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case "bytea":
		return arrow.BinaryTypes.Binary
	case "bigint[]":
		return arrow.ListOf(arrow.PrimitiveTypes.Int64)
	case "text[]":
		return arrow.ListOf(arrow.BinaryTypes.String)
	}
	panic("schema: no Arrow type for " + pgType) // programmer error: Tables() uses only the types above
}

// ArrowSchema is the Arrow schema of a table's snapshot: one field per column,
// named and typed after the column, nullability kept, the meaning in each
// field's metadata (and JSONExtension in a jsonb column's) and the catalog
// version in the schema's.
func ArrowSchema(t Table) *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		keys, values := []string{MetaMeaning}, []string{c.Meaning}
		if c.Type == "jsonb" {
			keys, values = append(keys, MetaExtensionName), append(values, JSONExtension)
		}
		fields[i] = arrow.Field{
			Name:     c.Name,
			Type:     ArrowType(c.Type),
			Nullable: c.Nullable,
			Metadata: arrow.NewMetadata(keys, values),
		}
	}
	md := arrow.NewMetadata([]string{MetaTable, MetaCatalogVersion}, []string{t.Name, strconv.Itoa(Version)})
	return arrow.NewSchema(fields, &md)
}

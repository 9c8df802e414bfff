package schema

import (
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
)

func TestArrowSchemaFollowsTables(t *testing.T) {
	t.Parallel()
	for _, tb := range Tables() {
		s := ArrowSchema(tb)
		if s.NumFields() != len(tb.Columns) {
			t.Fatalf("%s: %d fields, %d columns", tb.Name, s.NumFields(), len(tb.Columns))
		}
		if v, _ := s.Metadata().GetValue(MetaCatalogVersion); v != strconv.Itoa(Version) {
			t.Errorf("%s: catalog version metadata %q", tb.Name, v)
		}
		for i, c := range tb.Columns {
			f := s.Field(i)
			meaning, _ := f.Metadata.GetValue(MetaMeaning)
			if f.Name != c.Name || f.Nullable != c.Nullable || meaning != c.Meaning {
				t.Errorf("%s.%s: field %v", tb.Name, c.Name, f)
			}
			if ext, _ := f.Metadata.GetValue(MetaExtensionName); (ext == JSONExtension) != (c.Type == "jsonb") {
				t.Errorf("%s.%s (%s): extension metadata %q", tb.Name, c.Name, c.Type, ext)
			}
		}
	}
	u, _ := TableNamed("users")
	s := ArrowSchema(u)
	want := map[string]arrow.DataType{
		"id": arrow.PrimitiveTypes.Int64, "locked": arrow.FixedWidthTypes.Boolean, "email": arrow.BinaryTypes.String,
		"updated_at": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, "duties": arrow.BinaryTypes.String,
	}
	for name, typ := range want {
		idx := s.FieldIndices(name)
		if len(idx) != 1 || !arrow.TypeEqual(s.Field(idx[0]).Type, typ) {
			t.Errorf("users.%s: %v, want %v", name, s.Field(idx[0]).Type, typ)
		}
	}
	if f := s.Field(0); f.Nullable {
		t.Error("users.id is nullable in Arrow")
	}
}

package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/usersync/usersync/sync/apisim"
)

// checkSnapshotUsers reads the users table of the snapshot in dir back and
// checks each email is the HMAC of the simulator's and no phone number is
// there; it returns how many users it read.
func checkSnapshotUsers(t *testing.T, dir string, sim *apisim.Server) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "users", "[0-9]*", "*.parquet")) // <dir>/<schema>/users/<id>/, not current/
	if err != nil || len(files) == 0 {
		t.Fatalf("no users files in the snapshot: %v", err)
	}
	n := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 256}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		table, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer table.Release()
		sch := table.Schema()
		col := func(name string) int {
			idx := sch.FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("the snapshot's users have no column %s", name)
			}
			return idx[0]
		}
		ids, emails, phones := table.Column(col("id")).Data(), table.Column(col("email")).Data(), table.Column(col("phone_number")).Data()
		for c := range ids.Chunks() {
			id, email, phone := ids.Chunk(c).(*array.Int64), emails.Chunk(c), phones.Chunk(c)
			for i := range id.Len() {
				u, _ := sim.User(id.Value(i))
				want, _ := u.Attributes["email"].(string)
				if got := email.ValueStr(i); want != "" && got != piiHash(want) {
					t.Fatalf("user %d's email in the snapshot is %q, not the HMAC of the simulator's", id.Value(i), got)
				}
				if !phone.IsNull(i) {
					t.Fatalf("user %d's phone number is in the snapshot", id.Value(i))
				}
				n++
			}
		}
	}
	return n
}

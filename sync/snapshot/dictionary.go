package snapshot

import (
	"hash/maphash"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// dictionarySample is how many non-null values of the first record decide
// whether a column is dictionary encoded.
const dictionarySample = 4096

// chooseDictionary says, per column of rec (the table's first record), whether
// Parquet dictionary encoding is used. Dictionary encoding pays for columns
// whose values repeat (enums, time zones, foreign keys): their pages shrink
// to small indexes. For columns of mostly distinct values (emails, names,
// raw JSON, hashes, timestamps) it costs a hash-table insert per value and a
// dictionary that is abandoned once it outgrows its page, so it is skipped.
func chooseDictionary(rec arrow.Record, mode dictionaryMode) []bool {
	dict := make([]bool, rec.NumCols())
	for i := range dict {
		switch mode {
		case dictionaryAll:
			dict[i] = true
		case dictionaryNone:
		default:
			dict[i] = repetitive(rec.Column(i))
		}
	}
	return dict
}

// repetitive reports whether at most half of the first dictionarySample
// non-null values of arr are distinct. Booleans and lists are never
// dictionary encoded.
func repetitive(arr arrow.Array) bool {
	seed := maphash.MakeSeed()
	seen := make(map[uint64]struct{}, 256)
	valid := 0
	for i := 0; i < arr.Len() && valid < dictionarySample; i++ {
		if arr.IsNull(i) {
			continue
		}
		var h uint64
		switch a := arr.(type) {
		case *array.String:
			h = maphash.String(seed, a.Value(i))
		case *array.Binary:
			h = maphash.Bytes(seed, a.Value(i))
		case *array.Int64:
			h = uint64(a.Value(i))
		case *array.Timestamp:
			h = uint64(a.Value(i))
		default:
			return false
		}
		valid++
		seen[h] = struct{}{}
	}
	return valid > 0 && 2*len(seen) <= valid
}

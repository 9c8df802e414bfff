package snapshot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// pqarrow's FileWriter encodes the columns of a record one after the other
// on one goroutine, and encoding (dictionary, statistics, compression) is
// where a snapshot spends its time. The columns of a buffered row group
// have independent writers and page buffers, so columnEncoder encodes them
// in parallel, each worker with its own Arrow write context, handing out
// the largest columns first so the workers finish together. It computes the
// definition and repetition levels itself, which pqarrow does not export for
// this use; the catalog's types (flat columns and lists of primitives) keep
// that simple.

// columnEncoder writes records into buffered row groups.
type columnEncoder struct {
	props    pqarrow.ArrowWriterProperties
	nullable []bool // per field
	scratch  []levelScratch
}

// levelScratch holds one worker's level buffers, reused between columns.
type levelScratch struct {
	def, rep []int16
}

func newColumnEncoder(sch *arrow.Schema, props pqarrow.ArrowWriterProperties, workers int) *columnEncoder {
	e := &columnEncoder{props: props, scratch: make([]levelScratch, workers)}
	for _, f := range sch.Fields() {
		e.nullable = append(e.nullable, f.Nullable)
	}
	return e
}

// write encodes every column of rec into rg.
func (e *columnEncoder) write(ctx context.Context, rg *rowGroup, rec arrow.Record) error {
	cols := int(rec.NumCols())
	order := largestFirst(rec)
	workers := min(len(e.scratch), cols)
	if workers <= 1 {
		actx := pqarrow.NewArrowWriteContext(ctx, &e.props)
		for _, c := range order {
			if err := e.column(actx, rg, rec, c, &e.scratch[0]); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next   atomic.Int64
		failed atomic.Bool
		errs   = make([]error, workers)
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			actx := pqarrow.NewArrowWriteContext(ctx, &e.props)
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= cols {
					return
				}
				if err := e.column(actx, rg, rec, order[i], &e.scratch[w]); err != nil {
					errs[w] = err
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// column writes field c of rec to its column writer.
func (e *columnEncoder) column(actx context.Context, rg *rowGroup, rec arrow.Record, c int, s *levelScratch) error {
	err := guard(func() error {
		cw, err := rg.Column(c)
		if err != nil {
			return err
		}
		arr := rec.Column(c)
		if l, ok := arr.(*array.List); ok {
			return writeList(actx, cw, l, s)
		}
		if !e.nullable[c] {
			return pqarrow.WriteArrowToColumn(actx, cw, arr, nil, nil, false)
		}
		return pqarrow.WriteArrowToColumn(actx, cw, arr, s.flat(arr), nil, true)
	})
	if err != nil {
		return fmt.Errorf("column %s: %w", rec.ColumnName(c), err)
	}
	return nil
}

// flat returns the definition levels of a nullable top-level column:
// 1 for a value, 0 for a NULL.
func (s *levelScratch) flat(arr arrow.Array) []int16 {
	n := arr.Len()
	s.def = slices.Grow(s.def[:0], n)[:n]
	if arr.NullN() == 0 {
		for i := range s.def {
			s.def[i] = 1
		}
		return s.def
	}
	for i := range s.def {
		if arr.IsValid(i) {
			s.def[i] = 1
		} else {
			s.def[i] = 0
		}
	}
	return s.def
}

// writeList writes a list of primitives. Each row contributes one level
// entry when it is NULL or empty, else one per element; the repetition level
// is 0 at the start of a row and 1 inside it, and the definition level says
// how far down the value is defined (null list < empty list < null element
// < element), from the column's LevelInfo.
func writeList(actx context.Context, cw file.ColumnChunkWriter, l *array.List, s *levelScratch) error {
	li := cw.LevelInfo()
	present := li.DefLevel
	emptyList := li.RepeatedAncestorDefLevel - 1
	nullList := emptyList - 1
	nullElem := present - 1
	start, _ := l.ValueOffsets(0)
	_, end := l.ValueOffsets(max(l.Len()-1, 0))
	if l.Len() == 0 {
		start, end = 0, 0
	}
	values := array.NewSlice(l.ListValues(), start, end)
	defer values.Release()

	s.def, s.rep = s.def[:0], s.rep[:0]
	for i := range l.Len() {
		b, e := l.ValueOffsets(i)
		switch {
		case l.IsNull(i):
			if b != e {
				return errors.New("a NULL list with elements")
			}
			s.def, s.rep = append(s.def, nullList), append(s.rep, 0)
		case b == e:
			s.def, s.rep = append(s.def, emptyList), append(s.rep, 0)
		default:
			for j := b; j < e; j++ {
				d := present
				if values.IsNull(int(j - start)) {
					d = nullElem
				}
				r := int16(1)
				if j == b {
					r = 0
				}
				s.def, s.rep = append(s.def, d), append(s.rep, r)
			}
		}
	}
	return pqarrow.WriteArrowToColumn(actx, cw, values, s.def, s.rep, true)
}

// largestFirst returns rec's column indexes by decreasing buffer size.
func largestFirst(rec arrow.Record) []int {
	order := make([]int, rec.NumCols())
	size := make([]int, rec.NumCols())
	for i := range order {
		order[i] = i
		size[i] = dataSize(rec.Column(i).Data())
	}
	slices.SortStableFunc(order, func(a, b int) int { return size[b] - size[a] })
	return order
}

func dataSize(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}

package pii

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ParseUserID reads a user id to erase (usersync forget --user).
func ParseUserID(v string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("a user id is a positive whole number, not %q", v)
	}
	return id, nil
}

// ReadUserIDs reads a file of user ids, one a line, # starting a comment
// (usersync forget --file).
func ReadUserIDs(path string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--file: %w", err)
	}
	defer f.Close()
	var ids []int64
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		id, err := ParseUserID(line)
		if err != nil {
			return nil, fmt.Errorf("--file %s, line %d: %w", path, n, err)
		}
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--file %s: %w", path, err)
	}
	return ids, nil
}

// WriteErasures says what Forget erased, a line a user.
func WriteErasures(w io.Writer, erased []Erasure) {
	for _, x := range erased {
		if !x.Found {
			fmt.Fprintf(w, "user %d: not in the warehouse; nothing to erase (recorded in erasures)\n", x.UserID)
			continue
		}
		fmt.Fprintf(w, "user %d: erased: %d superseded versions and %d quarantine records deleted, %d personal values cleared in the current row\n",
			x.UserID, x.VersionsDeleted, x.QuarantineDeleted, x.ColumnsCleared)
	}
	fmt.Fprintln(w, "Parquet snapshots written before now keep their copies until retention removes them (docs/operations.md, Personal data).")
}

// ApplyReporting is Apply, saying on w what it does as usersync pii apply
// prints it: a line a batch, then what it rewrote.
func (s *Store) ApplyReporting(ctx context.Context, batch int, w io.Writer) error {
	fp := s.p.Fingerprint()
	fmt.Fprintf(w, "applying personal-data policy %s\n", fp)
	pr, err := s.Apply(ctx, batch, func(p ApplyProgress) {
		if p.Resumed {
			fmt.Fprintf(w, "  (resumed a stopped apply) ")
		}
		fmt.Fprintf(w, "  %s: up to id %d, %d rows rewritten in all\n", p.Phase, p.LastID, p.Rewritten)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "done: %d rows rewritten; users, history and quarantine follow the policy\n", pr.Rewritten)
	if pr.KeptOtherKey > 0 {
		fmt.Fprintf(w, "%d values were hashed under another key and are left as they were (a hash cannot be re-keyed); a sync rewrites a user's row when it changes\n", pr.KeptOtherKey)
	}
	return nil
}

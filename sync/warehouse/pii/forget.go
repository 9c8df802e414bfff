package pii

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/sync/normalize"
)

// Erasure is what Forget did for one user; it holds no personal data.
type Erasure struct {
	UserID            int64 `json:"user_id"`
	Found             bool  `json:"found"` // the warehouse held something of the user
	VersionsDeleted   int64 `json:"versions_deleted"`
	QuarantineDeleted int64 `json:"quarantine_deleted"`
	ColumnsCleared    int64 `json:"columns_cleared"`
}

// Forget erases users, in one transaction: their superseded versions and
// quarantine records are deleted, and the personal columns of their current
// row (the catalog's personal attributes and the policy's hashed and
// dropped ones), the attributes kept in raw and their data connections are
// cleared, and its content hash becomes normalize.ErasedHash. Each erasure is recorded in erasures, users unknown to the
// warehouse included (Found false).
func (pd *Store) Forget(ctx context.Context, ids []int64) ([]Erasure, error) {
	out := make([]Erasure, 0, len(ids))
	err := pgx.BeginFunc(ctx, pd.pool, func(tx pgx.Tx) error {
		for _, id := range ids {
			e, err := pd.forgetOne(ctx, tx, id)
			if err != nil {
				return fmt.Errorf("erasing user %d: %w", id, err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("forgetting %d users: %w", len(ids), err)
	}
	return out, nil
}

func (pd *Store) forgetOne(ctx context.Context, tx pgx.Tx, id int64) (Erasure, error) {
	e := Erasure{UserID: id}
	var updatedAt time.Time // the epoch when null (forgetCurrent)
	err := tx.QueryRow(ctx, pd.sql.forgetCurrent, id).Scan(&e.ColumnsCleared, &updatedAt)
	switch {
	case err == nil:
		e.Found = true
		// The content hash no longer derives from what was cleared.
		if _, err := tx.Exec(ctx, pd.sql.forgetHash, id, normalize.ErasedHash(updatedAt)); err != nil {
			return e, fmt.Errorf("marking the row erased: %w", err)
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return e, fmt.Errorf("clearing the current row: %w", err)
	}

	tag, err := tx.Exec(ctx, pd.sql.forgetVersions, id)
	if err != nil {
		return e, fmt.Errorf("deleting versions: %w", err)
	}
	e.VersionsDeleted = tag.RowsAffected()
	if tag, err = tx.Exec(ctx, pd.sql.forgetQuarantine, id); err != nil {
		return e, fmt.Errorf("deleting quarantine records: %w", err)
	}
	e.QuarantineDeleted = tag.RowsAffected()
	e.Found = e.Found || e.VersionsDeleted > 0 || e.QuarantineDeleted > 0
	if _, err := tx.Exec(ctx, pd.sql.insertErasure, id, e.Found, e.VersionsDeleted, e.QuarantineDeleted, e.ColumnsCleared); err != nil {
		return e, fmt.Errorf("recording the erasure: %w", err)
	}
	return e, nil
}

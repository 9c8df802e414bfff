package tokens

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/secret"
)

// Rekey seals every OAuth token stored in schema schemaName again with
// ring's first key, opening each with the key of its id (plain-text ones,
// stored before keys, are sealed too), in one transaction. It returns how
// many credentials it sealed again.
func Rekey(ctx context.Context, pool *pgxpool.Pool, schemaName string, ring secret.Ring) (int, error) {
	if err := schema.ValidateIdentifier(schemaName); err != nil {
		return 0, err
	}
	q, err := newStatements(schemaName)
	if err != nil {
		return 0, err
	}
	n := 0
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q.all)
		if err != nil {
			return err
		}
		type row struct{ key, refresh, access string }
		stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.key, &x.refresh, &x.access)
		})
		if err != nil {
			return err
		}
		for _, x := range stored {
			rt, err := reseal(ring, schemaName, x.key, "refresh_token", x.refresh)
			if err != nil {
				return err
			}
			at, err := reseal(ring, schemaName, x.key, "access_token", x.access)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, q.reseal, x.key, rt, nullable(at)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sealing the OAuth tokens of schema %s again: %w", schemaName, keyNamed(err))
	}
	return n, nil
}

func reseal(ring secret.Ring, schemaName, tokenKey, col, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	at := bound(schemaName, tokenKey, col)
	plain, _, err := ring.Open(at, v)
	if err != nil {
		return "", fmt.Errorf("opening the %s: %w", col, err)
	}
	return ring[0].Seal(at, plain)
}

package jobs

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTickIsOneTransaction: the tick lists the accounts, reads their last
// jobs and inserts the due ones in one transaction, the largest share of
// an idle fleet's commits otherwise: a trigger records the transaction
// that inserts each job.
func TestTickIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, riverSchema := migratedRiver(t, 10)
	logger := slog.New(slog.DiscardHandler)
	q := `CREATE TABLE "` + riverSchema + `".inserted_in (kind text, xid bigint);
		CREATE FUNCTION "` + riverSchema + `".record_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO "` + riverSchema + `".inserted_in VALUES (NEW.kind, txid_current()); RETURN NEW; END $$;
		CREATE TRIGGER record_insert AFTER INSERT ON "` + riverSchema + `".river_job FOR EACH ROW EXECUTE FUNCTION "` + riverSchema + `".record_insert()`
	if _, err := pool.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
	every, err := ParseSchedule("sync", "@every 1h", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	list := []Registered{{Name: "eu", Schedules: Schedules{Sync: every}}}
	var listedIn atomic.Int64 // the transaction of the first listing
	accounts := func(ctx context.Context, tx pgx.Tx) ([]Registered, error) {
		if tx == nil {
			t.Error("the tick listed the accounts outside its transaction")
			return list, nil
		}
		var xid int64
		if err := tx.QueryRow(ctx, `SELECT txid_current()`).Scan(&xid); err != nil {
			return nil, err
		}
		listedIn.CompareAndSwap(0, xid)
		return list, nil
	}
	client, err := NewClient(ClientConfig{Pool: pool, RiverSchema: riverSchema,
		Deps:     &Deps{Accounts: pausedAccounts{}, Drain: make(chan struct{}), Logger: logger},
		Accounts: accounts, FleetTick: 300 * time.Millisecond, SoftStop: time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, client)
	var insertedIn int64
	waitUntil(t, "the first tick's sync", 30*time.Second, func() bool {
		err := pool.QueryRow(ctx, `SELECT xid FROM "`+riverSchema+`".inserted_in WHERE kind = $1`, KindSync).Scan(&insertedIn)
		return err == nil
	})
	if insertedIn != listedIn.Load() {
		t.Fatalf("the sync was inserted in transaction %d, the accounts listed in %d: want one transaction", insertedIn, listedIn.Load())
	}
}

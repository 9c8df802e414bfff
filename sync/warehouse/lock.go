package warehouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrLocked is what TryLock returns while another process holds the sync
// lock.
var ErrLocked = errors.New("another sync, backfill or reconcile is running against this schema")

// SyncLock is a held sync lock. Release gives it back.
type SyncLock struct{ release func() }

// Release releases the lock; safe to call more than once.
func (l *SyncLock) Release() {
	if l != nil && l.release != nil {
		l.release()
		l.release = nil
	}
}

// lockKey is the advisory lock every run against one schema shares: inline
// `usersync sync`, the worker's jobs, backfills and reconciles.
func (s *Store) lockKey() string { return "usersync:sync:" + s.schema }

// Lock takes the sync lock, waiting for it (polling, so ctx cancels the
// wait). The lock is held on a dedicated connection until Release.
func (s *Store) Lock(ctx context.Context) (*SyncLock, error) { return s.lock(ctx, true) }

// TryLock takes the sync lock if it is free and returns ErrLocked at once
// otherwise. The lock is held on a dedicated connection until Release.
func (s *Store) TryLock(ctx context.Context) (*SyncLock, error) { return s.lock(ctx, false) }

func (s *Store) lock(ctx context.Context, wait bool) (*SyncLock, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring a connection for the sync lock: %w", err)
	}
	if wait {
		err = waitLock(ctx, conn.Conn(), s.locks.tryLock, s.lockKey())
	} else {
		var ok bool
		if err = conn.QueryRow(ctx, s.locks.tryLock, s.lockKey()).Scan(&ok); err == nil && !ok {
			conn.Release()
			return nil, ErrLocked
		}
	}
	if err != nil {
		conn.Release()
		return nil, fmt.Errorf("taking the sync lock: %w", err)
	}
	return &SyncLock{release: func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, s.locks.unlock, s.lockKey()); err != nil {
			// The session may be gone; closing the connection releases the lock either way.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
	}}, nil
}

// LockHeld reports whether some session holds the sync lock, without
// waiting: it takes the lock and gives it back at once when free.
func (s *Store) LockHeld(ctx context.Context) (bool, error) {
	l, err := s.TryLock(ctx)
	if errors.Is(err, ErrLocked) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	l.Release()
	return false, nil
}

// waitLock takes the advisory lock key on conn with tryLock, polling until it
// is free or ctx ends: after 10 ms, then doubling up to every 100 ms, since a
// holder (a migration, a short run) often lets go within a fraction of a
// second, which a longer pause would leave the lock idle for.
func waitLock(ctx context.Context, conn *pgx.Conn, tryLock, key string) error {
	pause := 10 * time.Millisecond
	for {
		var ok bool
		if err := conn.QueryRow(ctx, tryLock, key).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

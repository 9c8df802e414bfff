package syncer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

// TestFutureUpdatedAt: a user updated at 9999-12-31 is stored and counted,
// but does not move the watermark, so the next incremental sync still sees
// a later update of another user; one updated an hour ahead (within
// MaxFutureSkew) moves it as any other.
func TestFutureUpdatedAt(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	tests := []struct {
		name      string
		updatedAt time.Time
		skew      time.Duration
		future    int64
	}{
		{"9999-12-31", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), 0, 1},
		{"an hour ahead, within the default allowance", now.Add(time.Hour).Truncate(time.Millisecond), 0, 0},
		{"an hour ahead, beyond an allowance of a minute", now.Add(time.Hour).Truncate(time.Millisecond), time.Minute, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			future := fmt.Sprintf(`{"type":"user","id":900001,"attributes":{"title":"t","updatedAt":%q}}`, jsonapi.FormatTime(tt.updatedAt))
			e := newEnvWith(t, apisim.Options{Users: 40}, poisonAPI("/api/v2/users", future))
			cfg := syncer.Config{MaxFutureSkew: tt.skew}
			sum := e.run(t, cfg, syncer.Request{Kind: warehouse.KindFull})
			if sum.FutureUpdatedAt != tt.future {
				t.Errorf("full sync counted %d future-dated users, want %d", sum.FutureUpdatedAt, tt.future)
			}
			if n := e.count(t, `SELECT count(*) FROM %s.users WHERE id = 900001`); n != 1 {
				t.Error("the future-dated user was not stored")
			}
			wm, err := e.store.Runs().Watermark(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.future == 0 {
				if !wm.Equal(tt.updatedAt) {
					t.Errorf("watermark %v, want %v", wm, tt.updatedAt)
				}
				return
			}
			if wm.After(time.Now().Add(time.Minute)) {
				t.Fatalf("watermark moved to %v", wm)
			}
			updated := e.sim.UpdateUsers(1)
			sum = e.run(t, cfg, syncer.Request{Kind: warehouse.KindIncremental})
			if sum.Updated != 1 {
				t.Errorf("incremental sync updated %d users, want user %d", sum.Updated, updated[0])
			}
			if sum.FutureUpdatedAt != 1 {
				t.Errorf("incremental sync counted %d future-dated users, want 1", sum.FutureUpdatedAt)
			}
			st, err := e.store.Status(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if st.FutureUpdatedAt != 1 {
				t.Errorf("status reports %d future-dated users, want 1", st.FutureUpdatedAt)
			}
		})
	}
}

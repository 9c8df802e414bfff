package accounts

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema/schematest"
)

// TestGuardFollowsTheRegistry: an account's guard holds while it is
// registered, not paused and has the settings of its stamp, and fails
// when it is paused, changed or removed.
func TestGuardFollowsTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := schematest.NewPool(t, 4)
	r, name := newRegistry(t, pool, true)
	if err := r.Add(ctx, Account{Name: "eu", Settings: map[string]string{SchemaSetting: name + "_eu"}}); err != nil {
		t.Fatal(err)
	}
	h, err := r.Head(ctx, "eu")
	if err != nil {
		t.Fatal(err)
	}
	holds := func(stamp string) bool {
		t.Helper()
		sql, args := r.Guard("eu", stamp)
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT "+sql, pgx.NamedArgs(args)).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	step := func(what string, want bool, stamp string) {
		t.Helper()
		if got := holds(stamp); got != want {
			t.Errorf("%s: the guard holds = %v, want %v", what, got, want)
		}
	}
	step("registered", true, h.Stamp)
	step("another stamp", false, "not-the-stamp")
	if err := r.Pause(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	step("paused", false, h.Stamp)
	if err := r.Resume(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	step("resumed", true, h.Stamp)
	if err := r.UpdateSettings(ctx, "eu", map[string]string{"USERSYNC_PAGE_SIZE": "50"}); err != nil {
		t.Fatal(err)
	}
	step("changed, the old stamp", false, h.Stamp)
	if h, err = r.Head(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	step("changed, its new stamp", true, h.Stamp)
	if err := r.Remove(ctx, "eu"); err != nil {
		t.Fatal(err)
	}
	step("removed", false, h.Stamp)
}

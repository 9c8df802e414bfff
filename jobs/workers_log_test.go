package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/schema/schematest"
)

// unreadableAccounts opens no account, as a registry whose rows cannot be
// read, and calls opened with each job's context and account.
type unreadableAccounts struct {
	opened func(ctx context.Context, name string)
}

func (u *unreadableAccounts) Opened(string) *Account { return nil }

func (u *unreadableAccounts) Open(ctx context.Context, name string) (*Account, error) {
	if u.opened != nil {
		u.opened(ctx, name)
	}
	return nil, errors.New("the account's settings could not be read")
}

// TestRiverLinesNameTheAccount: the lines River logs itself about a job (a
// failure it retries) name the job's account, as the worker's own lines do.
func TestRiverLinesNameTheAccount(t *testing.T) {
	t.Parallel()
	e := startUnreadable(t, nil)
	errored := func() []string {
		var out []string
		for _, l := range strings.Split(e.String(), "\n") {
			if strings.Contains(l, "Job errored") {
				out = append(out, l)
			}
		}
		return out
	}
	waitUntil(t, "River to log both jobs' failures", 30*time.Second, func() bool { return len(errored()) >= 2 })
	named := map[string]bool{}
	for _, l := range errored() {
		switch {
		case strings.Contains(l, " account=eu"):
			named["eu"] = true
		case strings.Contains(l, " account=default"):
			named[DefaultAccount] = true
		default:
			t.Errorf("River's line does not name the job's account: %s", l)
		}
	}
	if !named["eu"] || !named[DefaultAccount] {
		t.Errorf("River's lines named %v, want eu and default:\n%s", named, strings.Join(errored(), "\n"))
	}
}

// startUnreadable starts a worker's River client whose accounts cannot be
// opened (unreadableAccounts, with opened), inserts a sync job of account eu
// and one of the default account, and returns River's log.
func startUnreadable(t *testing.T, opened func(ctx context.Context, name string)) *lockedBuffer {
	t.Helper()
	ctx := context.Background()
	pool := schematest.NewPool(t, 6)
	river := RiverSchema(schematest.NewSchemaName(t, pool))
	if _, err := MigrateRiver(ctx, pool, river, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	deps := &Deps{Accounts: &unreadableAccounts{opened: opened}, Drain: make(chan struct{}), Logger: slog.New(slog.DiscardHandler)}
	client, err := NewClient(ClientConfig{Pool: pool, RiverSchema: river, Deps: deps, MaxWorkers: 1, LongWorkers: 1, SnapshotWorkers: 1,
		SoftStop: time.Second, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, client)
	for _, args := range []SyncArgs{{Account: "eu"}, {}} {
		if _, err := client.Insert(ctx, args, nil); err != nil {
			t.Fatal(err)
		}
	}
	return logs
}

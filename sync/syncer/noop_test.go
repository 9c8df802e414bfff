package syncer_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
	"github.com/usersync/usersync/sync/syncer"
	"github.com/usersync/usersync/sync/warehouse"
)

func TestNoOpSyncStatements(t *testing.T) {
	t.Parallel()
	var c statementCounter
	sim := apisim.New(apisim.Options{Seed: 7, Users: 600})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	e := &testEnv{sim: sim, srv: srv, client: newClient(t, srv.URL, jsonapi.StaticToken("test-token")), store: migratedStore(t, countedPool(t, &c))}
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindFull})
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	c.start()
	e.run(t, syncer.Config{}, syncer.Request{Kind: warehouse.KindIncremental})
	sqls, commits, ddl := c.stop()
	for _, s := range sqls {
		t.Log(strings.Join(strings.Fields(s), " "))
	}
	t.Logf("%d statements, %d commits, %d ddl", len(sqls), commits, ddl)
}

package accounts_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/usersync/usersync/schema/schematest"
	"github.com/usersync/usersync/sync/warehouse/accounts"
)

// ExampleRegistry registers an account in a fleet's registry, pauses it and
// lists the fleet; a second account may not take the first one's schema.
func ExampleRegistry() {
	ctx := context.Background()
	pool, name, drop, err := schematest.OpenExample(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	river := name + "_river" // the fleet's River schema, which River's migrations create
	if _, err := pool.Exec(ctx, `CREATE SCHEMA "`+river+`"`); err != nil {
		fmt.Println(err)
		return
	}
	reg, err := accounts.New(pool, river)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	acme := accounts.Account{Name: "acme", Settings: map[string]string{accounts.SchemaSetting: name + "_acme"}}
	if err := reg.Add(ctx, acme); err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.Pause(ctx, "acme"); err != nil {
		fmt.Println(err)
		return
	}
	other := accounts.Account{Name: "other", Settings: acme.Settings}
	fmt.Println("same schema refused:", errors.Is(reg.Add(ctx, other), accounts.ErrSchemaTaken))
	list, err := reg.List(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range list {
		fmt.Printf("%s paused=%t schema is the account's own: %t\n", a.Name, a.Paused(), a.Schema() == name+"_acme")
	}
	// Output:
	// same schema refused: true
	// acme paused=true schema is the account's own: true
}

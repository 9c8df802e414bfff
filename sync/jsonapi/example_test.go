package jsonapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/usersync/usersync/sync/apisim"
	"github.com/usersync/usersync/sync/jsonapi"
)

// ExampleClient_Collection walks the roles of a simulated account four to a
// page, by following each page's next link until the last page.
func ExampleClient_Collection() {
	ctx := context.Background()
	srv := httptest.NewServer(apisim.New(apisim.Options{Seed: 1, Users: 20, Roles: 10}))
	defer srv.Close()
	c, err := jsonapi.NewClient(jsonapi.Options{
		BaseURL:   srv.URL,
		Auth:      jsonapi.StaticToken("example-token"),
		UserAgent: "usersync-example",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	it := c.Collection("roles", jsonapi.Query{}.Sort("id").PageSize(4))
	for {
		page, err := it.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		if page == nil {
			break
		}
		first, last := page.Data[0].ID, page.Data[len(page.Data)-1].ID
		fmt.Printf("page %d: %d roles, ids %d to %d, last page: %t\n", page.Number, len(page.Data), first, last, page.NextURL == "")
	}
	fmt.Println("requests:", c.Stats().Requests)
	// Output:
	// page 1: 4 roles, ids 1 to 4, last page: false
	// page 2: 4 roles, ids 5 to 8, last page: false
	// page 3: 2 roles, ids 9 to 10, last page: true
	// requests: 3
}

package cli

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// account is one account of the fleet (#41): its name, its effective
// configuration and whether it is paused.
type account struct {
	Name   string
	Cfg    Config
	Paused bool
}

// loadAccounts returns the default account first, then every registered
// one. This first version, until the registry lands, returns the default
// account only: the configuration of the environment, never paused.
func loadAccounts(_ context.Context, e *env, _ *pgxpool.Pool) ([]account, error) {
	return []account{{Name: "default", Cfg: e.cfg}}, nil
}

package cli

import (
	"io"
	"log/slog"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/jsonapi"
)

// env0 builds an *env from a Config, for tests that call helpers directly.
func (c env0) env() *env {
	return &env{cfg: c.cfg, stdout: io.Discard, stderr: io.Discard,
		logger: slog.New(slog.DiscardHandler)}
}

type env0 struct{ cfg config.Config }

func queryFirstPage() jsonapi.Query { return jsonapi.Query{}.PageSize(10) }

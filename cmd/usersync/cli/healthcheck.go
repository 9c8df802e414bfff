package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

func healthcheckCommand() command {
	return command{
		name:    "healthcheck",
		summary: "exit 0 when the worker on USERSYNC_HTTP_ADDR answers /healthz (for container HEALTHCHECKs)",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			path := fs.String("path", "/healthz", "the endpoint to check: /healthz (alive) or /readyz (ready)")
			timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
			return func(ctx context.Context, e *env, _ []string) error {
				if e.cfg.HTTPAddr == "off" {
					return usageError{fmt.Errorf("USERSYNC_HTTP_ADDR is off: the worker serves no health endpoint")}
				}
				host, port, _ := net.SplitHostPort(e.cfg.HTTPAddr)
				if host == "" || host == "0.0.0.0" || host == "::" {
					host = "127.0.0.1"
				}
				url := "http://" + net.JoinHostPort(host, port) + *path
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					return usageError{fmt.Errorf("--path: %w", err)}
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return fmt.Errorf("checking %s: %w", url, err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, oneLine(string(body)))
				}
				fmt.Fprintf(e.stdout, "%s: %s", url, body)
				return nil
			}
		},
	}
}

// Package deploy holds usersync's deployment files, not Go code: the
// container image (Dockerfile), Docker Compose (compose.yaml and
// compose.simulator.yaml), Kubernetes manifests (kubernetes/), systemd units
// (systemd/), the settings example (usersync.env.example), and the Grafana
// dashboard and Prometheus alert rules (monitoring/). deploy/dev/
// holds the scripts of the throwaway development database and the demos.
//
// The package's tests hold those files to the binary they deploy: the image is
// built with the Makefile's flags and is static; every command, flag and
// environment variable the files and the operator and analyst docs use is one
// usersync has (from cli.CommandFlags and config.EnvNames); grace periods exceed
// the shutdown timeout; the manifests reference each other consistently; the
// analysts' SQL runs against a synced warehouse; and every metric the dashboard
// and the alerts query is one a running worker exports, every alert's runbook
// a section of docs/operations.md.
package deploy

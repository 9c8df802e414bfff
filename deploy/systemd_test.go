package deploy_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unit is a systemd unit file: each key's values, in order, by section.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, rel string) unit {
	t.Helper()
	u := unit{}
	section := ""
	for _, line := range strings.Split(readFile(t, rel), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot read %q", rel, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unit) last(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// environment returns the variables set by Environment= lines, whose
// assignments are separated by spaces and may be double-quoted.
func (u unit) environment() map[string]string {
	out := map[string]string{}
	for _, line := range u["Service"]["Environment"] {
		var words []string
		var cur strings.Builder
		quoted := false
		for _, r := range line + " " {
			switch {
			case r == '"':
				quoted = !quoted
			case r == ' ' && !quoted:
				if cur.Len() > 0 {
					words = append(words, cur.String())
					cur.Reset()
				}
			default:
				cur.WriteRune(r)
			}
		}
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			out[k] = v
		}
	}
	return out
}

// TestSystemdUnits checks the worker's and the migration's units: what they
// run, as whom, with which settings, how the worker stops and restarts, and
// the hardening.
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	example := parseEnvExample(t)
	for _, tc := range []struct {
		file, typ, command string
	}{
		{"deploy/systemd/usersync.service", "simple", "worker"},
		{"deploy/systemd/usersync-migrate.service", "oneshot", "migrate"},
	} {
		u := parseUnit(t, tc.file)
		exec := u.last("Service", "ExecStart")
		inv := shellInvocations(exec)
		if len(inv) != 1 || inv[0][0] != tc.command || !strings.HasPrefix(exec, "/usr/local/bin/usersync ") {
			t.Errorf("%s: ExecStart=%s, want /usr/local/bin/usersync %s", tc.file, exec, tc.command)
		}
		for _, args := range inv {
			checkArgs(t, tc.file+" ExecStart", args)
		}
		for key, want := range map[string]string{"Type": tc.typ, "User": "usersync", "Group": "usersync"} {
			if got := u.last("Service", key); got != want {
				t.Errorf("%s: %s=%s, want %s", tc.file, key, got, want)
			}
		}
		if files := u["Service"]["EnvironmentFile"]; len(files) == 0 || files[0] != "/etc/usersync/usersync.env" {
			t.Errorf("%s: EnvironmentFile=%v, want /etc/usersync/usersync.env", tc.file, files)
		}
		env := u.environment()
		for k := range env {
			checkEnvName(t, tc.file+" Environment=", k)
		}
		// The env file overrides Environment= lines, as systemd reads it later.
		for k, v := range example.set {
			env[k] = v
		}
		loadsCleanly(t, tc.file+" with usersync.env.example", env)
		for _, key := range []string{"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices",
			"ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups",
			"RestrictAddressFamilies", "RestrictNamespaces", "LockPersonality", "MemoryDenyWriteExecute",
			"SystemCallFilter", "CapabilityBoundingSet"} {
			if _, ok := u["Service"][key]; !ok {
				t.Errorf("%s: no %s= hardening", tc.file, key)
			}
		}
		if got := u.last("Service", "ProtectSystem"); got != "strict" {
			t.Errorf("%s: ProtectSystem=%s, want strict", tc.file, got)
		}
		if got := u.last("Service", "CapabilityBoundingSet"); got != "" {
			t.Errorf("%s: CapabilityBoundingSet=%s, want empty (no capabilities)", tc.file, got)
		}
	}

	u := parseUnit(t, "deploy/systemd/usersync.service")
	for key, want := range map[string]string{"Restart": "on-failure", "KillSignal": "SIGTERM", "StateDirectory": "usersync"} {
		if got := u.last("Service", key); got != want {
			t.Errorf("usersync.service: %s=%s, want %s", key, got, want)
		}
	}
	stop, err := time.ParseDuration(u.last("Service", "TimeoutStopSec"))
	if err != nil {
		t.Errorf("usersync.service: TimeoutStopSec: %v", err)
	}
	shutdown := example.set["USERSYNC_SHUTDOWN_TIMEOUT"]
	if shutdown == "" {
		shutdown = u.environment()["USERSYNC_SHUTDOWN_TIMEOUT"]
	}
	checkGrace(t, "usersync.service TimeoutStopSec", stop, shutdown)
	if dir := u.environment()["USERSYNC_SNAPSHOT_DIR"]; !strings.HasPrefix(dir, "/var/lib/usersync/") {
		t.Errorf("usersync.service: USERSYNC_SNAPSHOT_DIR=%s is outside its StateDirectory, which ProtectSystem=strict leaves read-only", dir)
	}
	if !strings.Contains(strings.Join(u["Unit"]["After"], " "), "usersync-migrate.service") {
		t.Error("usersync.service should start after usersync-migrate.service")
	}
}

// TestSystemdMemoryAboveGOMEMLIMIT: the worker unit's MemoryHigh (where the
// kernel starts throttling and reclaiming) lies above GOMEMLIMIT plus every
// page of the binary, which the cgroup is charged for once resident and
// GOMEMLIMIT does not count, plus a tenth of GOMEMLIMIT for what neither
// counts (written snapshots in the page cache, socket buffers); MemoryMax
// (the OOM kill) lies a tenth above MemoryHigh. The binary is built as the
// Makefile builds it: its size bounds its resident pages.
func TestSystemdMemoryAboveGOMEMLIMIT(t *testing.T) {
	t.Parallel()
	u := parseUnit(t, "deploy/systemd/usersync.service")
	limit, err := parseGoMemLimit(u.environment()["GOMEMLIMIT"])
	if err != nil {
		t.Fatalf("usersync.service: GOMEMLIMIT: %v", err)
	}
	high, err := parseSystemdBytes(u.last("Service", "MemoryHigh"))
	if err != nil {
		t.Fatalf("usersync.service: MemoryHigh: %v", err)
	}
	hardMax, err := parseSystemdBytes(u.last("Service", "MemoryMax"))
	if err != nil {
		t.Fatalf("usersync.service: MemoryMax: %v", err)
	}
	fi, err := os.Stat(releaseBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	if want := limit + fi.Size() + limit/10; high < want {
		t.Errorf("usersync.service: MemoryHigh=%s (%d MiB) is below GOMEMLIMIT (%d MiB) + the binary (%d MiB) + a tenth of GOMEMLIMIT = %d MiB: the kernel would throttle the worker before its collector works harder",
			u.last("Service", "MemoryHigh"), high/mib, limit/mib, fi.Size()/mib, want/mib)
	}
	if want := high + high/10; hardMax < want {
		t.Errorf("usersync.service: MemoryMax=%s (%d MiB) is not a tenth above MemoryHigh (%d MiB): want at least %d MiB",
			u.last("Service", "MemoryMax"), hardMax/mib, high/mib, want/mib)
	}
}

// parseSystemdBytes parses a systemd memory size: bytes, or a K, M, G or T
// suffix of base 1024 (systemd.resource-control(5)).
func parseSystemdBytes(v string) (int64, error) {
	mult := int64(1)
	if n := len(v); n > 0 {
		if i := strings.IndexByte("KMGT", v[n-1]); i >= 0 {
			mult, v = int64(1)<<(10*(i+1)), v[:n-1]
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size in bytes", v)
	}
	return n * mult, nil
}

// parseGoMemLimit parses GOMEMLIMIT: bytes with an optional B, KiB, MiB,
// GiB or TiB suffix (runtime/debug.SetMemoryLimit).
func parseGoMemLimit(v string) (int64, error) {
	mult := int64(1)
	for i, suffix := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if s, ok := strings.CutSuffix(v, suffix); ok {
			mult, v = int64(1)<<(10*(i+1)), s
			break
		}
	}
	v = strings.TrimSuffix(v, "B")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size in bytes", v)
	}
	return n * mult, nil
}

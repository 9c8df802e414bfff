package deploy_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/usersync/usersync/jobs/fleet/config"
)

var update = flag.Bool("update", false, "rewrite deploy/usersync.env.example from the settings")

const envExamplePath = "deploy/usersync.env.example"

const envExampleHeader = `# usersync settings for /etc/usersync/usersync.env, read by
# deploy/systemd/usersync.service (EnvironmentFile=) and usable with
# docker run --env-file: one KEY=value a line, no quotes, no export.
#
# Generated from jobs/fleet/config/settings.go by
#   go test ./deploy -run TestEnvExample -update
# so every setting usersync reads is here. A commented line shows the default
# (or, where there is none, an example); uncomment it to change it. Secrets
# never go in this file: each is read from the file its _FILE variable names
# (keep those files mode 0640, owner root, group usersync).
`

// envExampleSet are the settings the example sets, as a deployment must.
var envExampleSet = map[string]string{
	"DATABASE_URL":            "postgres://usersync@db.example.internal:5432/warehouse?sslmode=verify-full&passfile=/etc/usersync/pgpass",
	"USERSYNC_API_URL":        "https://api.example.com",
	"USERSYNC_API_TOKEN_FILE": "/etc/usersync/api-token",
}

// envExampleNotes add what a deployment should know to a setting's meaning.
var envExampleNotes = map[string]string{
	"DATABASE_URL": "Keep the password out of the URL: passfile names a file of " +
		"host:port:database:user:password lines, like ~/.pgpass.",
	"USERSYNC_API_TOKEN":       "Use either this token or OAuth (the USERSYNC_OAUTH_ settings), not both.",
	"USERSYNC_OAUTH_CLIENT_ID": "Then authorize once with usersync auth login (docs/operations.md, OAuth).",
	"USERSYNC_HTTP_ADDR": "Keep it on loopback unless Prometheus scrapes from another host; guard " +
		"the job UI with USERSYNC_HTTP_TOKEN or USERSYNC_HTTP_BASIC_AUTH when it is not.",
	"USERSYNC_SNAPSHOT_DIR": "usersync.service sets /var/lib/usersync/snapshots, in its state folder; " +
		"a folder elsewhere needs ReadWritePaths= in the unit.",
	"USERSYNC_SHUTDOWN_TIMEOUT": "TimeoutStopSec= in usersync.service must exceed it by 10s or more.",
}

// secretFile is where the example keeps a secret's file: USERSYNC_API_TOKEN
// → /etc/usersync/api-token (the same names as the Kubernetes Secret's keys).
func secretFile(env string) string {
	name := strings.ToLower(strings.TrimPrefix(env, "USERSYNC_"))
	return "/etc/usersync/" + strings.ReplaceAll(name, "_", "-")
}

// renderEnvExample renders deploy/usersync.env.example from the settings.
func renderEnvExample() string {
	var b strings.Builder
	b.WriteString(envExampleHeader)
	for _, s := range config.Settings() {
		b.WriteString("\n")
		text := strings.ToUpper(s.Meaning[:1]) + s.Meaning[1:]
		if note := envExampleNotes[s.Env]; note != "" {
			text += " " + note
		}
		for _, line := range wrap(text, 76) {
			b.WriteString("# " + line + "\n")
		}
		name, value := s.Env, s.Default
		if s.Secret {
			name, value = s.Env+"_FILE", secretFile(s.Env)
		} else if value == "" {
			value = s.Example
		}
		if v, ok := envExampleSet[name]; ok {
			b.WriteString(name + "=" + v + "\n")
		} else {
			b.WriteString("# " + name + "=" + value + "\n")
		}
	}
	return b.String()
}

func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// envExample is the parsed example: the variables it sets, and those it
// shows commented out.
type envExample struct {
	set, commented map[string]string
}

var envLine = regexp.MustCompile(`^(# )?([A-Z][A-Z0-9_]*)=(.*)$`)

func parseEnvExample(t *testing.T) envExample {
	t.Helper()
	e := envExample{set: map[string]string{}, commented: map[string]string{}}
	for _, line := range strings.Split(readFile(t, envExamplePath), "\n") {
		m := envLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] == "" {
			e.set[m[2]] = m[3]
		} else {
			e.commented[m[2]] = m[3]
		}
	}
	return e
}

// TestEnvExample keeps deploy/usersync.env.example equal to the settings
// (go test ./deploy -run TestEnvExample -update rewrites it), and checks that
// what it sets, and every value it shows, is accepted by usersync.
func TestEnvExample(t *testing.T) {
	t.Parallel()
	want := renderEnvExample()
	got, err := os.ReadFile(filepath.Join(root, envExamplePath))
	if *update && (err != nil || string(got) != want) {
		if err := os.WriteFile(filepath.Join(root, envExamplePath), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err != nil || string(got) != want {
		t.Fatalf("%s is stale: run go test ./deploy -run TestEnvExample -update", envExamplePath)
	}

	e := parseEnvExample(t)
	all := map[string]string{}
	for k, v := range e.commented {
		all[k] = v
	}
	for k, v := range e.set {
		all[k] = v
	}
	for k := range all {
		checkEnvName(t, envExamplePath, k)
	}
	for _, s := range config.Settings() {
		name := s.Env
		if s.Secret {
			name += "_FILE"
			if _, plain := all[s.Env]; plain {
				t.Errorf("%s: the secret %s must appear only as %s", envExamplePath, s.Env, name)
			}
		}
		if _, ok := all[name]; !ok {
			t.Errorf("%s: %s is missing", envExamplePath, name)
		}
	}
	loadsCleanly(t, envExamplePath, e.set)
	loadsCleanly(t, envExamplePath+" with every line uncommented", all)
}

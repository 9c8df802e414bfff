package deploy_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/usersync/usersync/cmd/usersync/cli"
	"github.com/usersync/usersync/jobs/fleet/config"
)

// root is the repository root, seen from this package's folder (where go
// test runs).
const root = ".."

// stopMargin is how much longer than USERSYNC_SHUTDOWN_TIMEOUT a deployment
// must let a stopping worker run: after the timeout the worker gives its job
// queue 5 more seconds to stop and its HTTP server 2.
const stopMargin = 10 * time.Second

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// envNames is every environment variable usersync reads.
func envNames() map[string]bool {
	out := map[string]bool{}
	for _, n := range config.EnvNames() {
		out[n] = true
	}
	return out
}

// checkEnvName fails on a variable that looks like one of usersync's but is
// not one usersync reads: a typo that would be silently ignored.
func checkEnvName(t *testing.T, where, name string) {
	t.Helper()
	if (strings.HasPrefix(name, "USERSYNC_") || name == "DATABASE_URL") && !envNames()[name] {
		t.Errorf("%s: %s is not a variable usersync reads (see usersync help)", where, name)
	}
}

// settingDefault returns the default of a setting, from the settings table.
func settingDefault(t *testing.T, env string) string {
	t.Helper()
	for _, s := range config.Settings() {
		if s.Env == env {
			return s.Default
		}
	}
	t.Fatalf("no setting %s", env)
	return ""
}

// shutdownTimeout is the USERSYNC_SHUTDOWN_TIMEOUT a deployment runs with:
// the value it sets, or the default.
func shutdownTimeout(t *testing.T, set string) time.Duration {
	t.Helper()
	v := set
	if v == "" {
		v = settingDefault(t, "USERSYNC_SHUTDOWN_TIMEOUT")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("USERSYNC_SHUTDOWN_TIMEOUT %q: %v", v, err)
	}
	return d
}

// checkGrace fails unless grace lets a stopping worker finish.
func checkGrace(t *testing.T, where string, grace time.Duration, shutdownSet string) {
	t.Helper()
	if need := shutdownTimeout(t, shutdownSet) + stopMargin; grace < need {
		t.Errorf("%s: the grace period %s is too short: a worker may take USERSYNC_SHUTDOWN_TIMEOUT + %s = %s to stop",
			where, grace, stopMargin, need)
	}
}

// checkArgs checks one usersync invocation, given the arguments after the
// program name: the command exists and takes every flag given.
func checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	flags := cli.CommandFlags()
	if len(args) == 0 {
		t.Errorf("%s: usersync is run without a command", where)
		return
	}
	cmd := args[0]
	if _, ok := flags[cmd]; !ok && len(args) > 1 {
		if _, ok := flags[cmd+" "+args[1]]; ok { // a subcommand: auth login
			cmd, args = cmd+" "+args[1], args[1:]
		}
	}
	if cmd == "help" {
		if len(args) > 1 {
			if _, ok := flags[args[1]]; !ok && args[1] != "settings" {
				t.Errorf("%s: usersync help %s: no such command", where, args[1])
			}
		}
		return
	}
	accepted, ok := flags[cmd]
	if !ok {
		t.Errorf("%s: usersync %s: no such command (commands: %s)", where, cmd, strings.Join(commandNames(), ", "))
		return
	}
	for _, a := range args[1:] {
		if a == "--" {
			return
		}
		name, isFlag := flagName(a)
		if !isFlag || name == "h" || name == "help" {
			continue
		}
		if !slices.Contains(accepted, name) {
			t.Errorf("%s: usersync %s has no flag --%s", where, cmd, name)
		}
	}
}

func commandNames() []string {
	var names []string
	for c := range cli.CommandFlags() {
		names = append(names, c)
	}
	sort.Strings(names)
	return names
}

func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" || len(arg) < 2 {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, name != ""
}

var commandLike = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// shellInvocations returns the arguments of every usersync invocation in a
// shell command line: a word that is usersync or a path ending in /usersync,
// followed by a command word, up to the end of that command (a pipe, a list
// operator, a redirection or a comment). A usersync that is a flag's value
// (kubectl -n usersync get pods) counts only when a known command follows.
func shellInvocations(line string) [][]string {
	words := strings.Fields(line)
	var out [][]string
	for i, w := range words {
		if w != "usersync" && !strings.HasSuffix(w, "/usersync") || i+1 >= len(words) {
			continue
		}
		next := words[i+1]
		if !commandLike.MatchString(next) {
			continue
		}
		_, known := cli.CommandFlags()[next]
		if i > 0 && strings.HasPrefix(words[i-1], "-") && !known && next != "help" {
			continue
		}
		var args []string
		for _, a := range words[i+1:] {
			if isShellOperator(a) {
				break
			}
			args = append(args, strings.TrimRight(a, ";"))
			if strings.HasSuffix(a, ";") {
				break
			}
		}
		out = append(out, args)
	}
	return out
}

func isShellOperator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", "\\":
		return true
	}
	return strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") ||
		strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "1>") || strings.HasPrefix(w, "|")
}

// argsAfterUsersync returns the arguments after the usersync program in an
// exec-form command (["/usersync", "healthcheck"]), or nil and false.
func argsAfterUsersync(cmd []string) ([]string, bool) {
	for i, w := range cmd {
		if w == "usersync" || strings.HasSuffix(w, "/usersync") {
			return cmd[i+1:], true
		}
	}
	return nil, false
}

// loadsCleanly runs `usersync version` in-process with env as its whole
// environment: loading the configuration checks every setting, so exit 0
// means every value given is valid and every USERSYNC_* variable is a
// setting (--strict-config). _FILE variables are pointed at a file
// holding a placeholder, since their real paths exist only where deployed.
func loadsCleanly(t *testing.T, where string, env map[string]string) {
	t.Helper()
	placeholder := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(placeholder, []byte("placeholder:secret-of-32-bytes-or-more\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The secrets key is 32 bytes in hex, not any text.
	keyFile := filepath.Join(t.TempDir(), "secrets-key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("5e", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var environ []string
	for k, v := range env {
		switch {
		case k == "USERSYNC_SECRETS_KEY_FILE" && v != "":
			v = keyFile
		case strings.HasSuffix(k, "_FILE") && v != "":
			v = placeholder
		}
		environ = append(environ, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), []string{"version", "--strict-config"}, environ, &stdout, &stderr); code != cli.ExitOK {
		t.Errorf("%s: usersync refuses these settings (exit %d): %s", where, code, strings.TrimSpace(stderr.String()))
	}
}

// releaseVersion is the version releaseBinary stamps.
const releaseVersion = "v0.0.0-deploy-test"

// releaseBinary builds usersync into a temporary folder the way the Makefile
// and the Dockerfile do (CGO_ENABLED=0, -trimpath, LDFLAGS, stamped
// releaseVersion) and returns its path.
func releaseBinary(t *testing.T) string {
	t.Helper()
	ldflags := strings.ReplaceAll(makefileVar(t, "LDFLAGS"), "$(VERSION)", releaseVersion)
	bin := filepath.Join(t.TempDir(), "usersync")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/usersync")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// makefileVar returns the value of a `NAME := value` line of the Makefile.
func makefileVar(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*:=\s*(.*?)\s*$`).FindStringSubmatch(readFile(t, "Makefile"))
	if m == nil {
		t.Fatalf("the Makefile does not set %s", name)
	}
	return m[1]
}

// TestMakefileBuildFlags pins what "built like the Makefile" means to the
// Makefile's build target, which the Dockerfile and the build test copy.
func TestMakefileBuildFlags(t *testing.T) {
	t.Parallel()
	mk := readFile(t, "Makefile")
	want := "CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'"
	if !strings.Contains(mk, want) {
		t.Errorf("the Makefile's build target no longer runs %q: update deploy/Dockerfile and this test", want)
	}
	if ld := makefileVar(t, "LDFLAGS"); !strings.Contains(ld, "cli.version=$(VERSION)") {
		t.Errorf("LDFLAGS %q does not stamp the version", ld)
	}
}

// TestBinaryIsStaticAndStamped builds usersync the way the Dockerfile does and
// checks it runs, says its version, and needs no dynamic loader (the final
// image has no libc).
func TestBinaryIsStaticAndStamped(t *testing.T) {
	t.Parallel()
	bin := releaseBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("usersync version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "usersync "+releaseVersion+" ") {
		t.Errorf("usersync version printed %q, want the stamped %s", out, releaseVersion)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("reading the binary as ELF: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP): it is not static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
}

// dockerInstruction is one instruction of a Dockerfile, continuation lines
// joined.
type dockerInstruction struct {
	stage int // index of the FROM it belongs to
	op    string
	args  string
}

func parseDockerfile(t *testing.T, text string) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	stage, cur := -1, ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		op, args, _ := strings.Cut(cur, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			stage++
		}
		out = append(out, dockerInstruction{stage: stage, op: op, args: strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// execForm decodes an instruction's JSON array form (["/usersync", "worker"]).
func execForm(t *testing.T, args string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Errorf("Dockerfile: %q is not in exec form (a JSON array): %v", args, err)
	}
	return out
}

// TestDockerfile checks the image's build and runtime: the Makefile's build,
// a Go matching go.mod, every source folder copied, a static base and a
// non-root user, the entrypoint, default command, health check, port and
// environment.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := parseDockerfile(t, readFile(t, "deploy/Dockerfile"))
	last := ins[len(ins)-1].stage
	var froms, copies []string
	var build, user, entrypoint, cmd, health, expose string
	env := map[string]string{}
	args := map[string]string{}
	for _, in := range ins {
		switch in.op {
		case "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		case "FROM":
			froms = append(froms, in.args)
		case "COPY":
			copies = append(copies, in.args)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				build = in.args
			}
		}
		if in.stage != last {
			continue
		}
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmd = in.args
		case "HEALTHCHECK":
			health = in.args
		case "EXPOSE":
			expose = in.args
		case "ENV":
			for k, v := range parseEnvInstruction(in.args) {
				env[k] = v
			}
		}
	}

	goMod := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "go.mod"))
	if goMod == nil || args["GO_VERSION"] != goMod[1] {
		t.Errorf("ARG GO_VERSION=%s, but go.mod asks for Go %v", args["GO_VERSION"], goMod)
	}
	if len(froms) < 2 || !strings.Contains(froms[0], "golang:${GO_VERSION}") {
		t.Errorf("the first stage should build on golang:${GO_VERSION}: %q", froms)
	}
	if final := froms[len(froms)-1]; final != "gcr.io/distroless/static-debian12:nonroot" && final != "scratch" {
		t.Errorf("the final stage is %q; want a static base (distroless static or scratch)", final)
	}

	ldflags := strings.ReplaceAll(makefileVar(t, "LDFLAGS"), "$(VERSION)", "${VERSION}")
	for _, want := range []string{"CGO_ENABLED=0", "go build -trimpath", `-ldflags "` + ldflags + `"`, "./cmd/usersync",
		"--mount=type=cache,target=/go/pkg/mod"} {
		if !strings.Contains(build, want) {
			t.Errorf("the go build step lacks %q (it must build like `make build`): %s", want, build)
		}
	}
	if _, ok := args["VERSION"]; !ok {
		t.Error("the Dockerfile has no ARG VERSION to stamp the version with")
	}
	for _, dir := range sourceFolders(t) {
		if !slices.ContainsFunc(copies, func(c string) bool { return strings.HasPrefix(c, dir+" ") }) {
			t.Errorf("the binary is built from %s/, which the Dockerfile does not COPY", dir)
		}
	}

	if !regexp.MustCompile(`^[1-9][0-9]*(:[0-9]+)?$`).MatchString(user) {
		t.Errorf("USER %q: want a numeric non-root user, which Kubernetes' runAsNonRoot can verify", user)
	}
	if ep := execForm(t, entrypoint); !slices.Equal(ep, []string{"/usersync"}) {
		t.Errorf(`ENTRYPOINT %q, want ["/usersync"]`, ep)
	}
	if c := execForm(t, cmd); !slices.Equal(c, []string{"worker"}) {
		t.Errorf(`CMD %q, want ["worker"]`, c)
	} else {
		checkArgs(t, "Dockerfile CMD", c)
	}
	_, hc, ok := strings.Cut(health, "CMD ")
	if hcArgs, isUsersync := argsAfterUsersync(execForm(t, hc)); !ok || !isUsersync || len(hcArgs) == 0 || hcArgs[0] != "healthcheck" {
		t.Errorf("HEALTHCHECK %q should run usersync healthcheck", health)
	} else {
		checkArgs(t, "Dockerfile HEALTHCHECK", hcArgs)
	}
	for k := range env {
		checkEnvName(t, "Dockerfile ENV", k)
	}
	if addr := env["USERSYNC_HTTP_ADDR"]; addr != "0.0.0.0:"+expose {
		t.Errorf("ENV USERSYNC_HTTP_ADDR=%s and EXPOSE %s: the worker must listen on every interface, on the exposed port", addr, expose)
	}
	loadsCleanly(t, "Dockerfile ENV", env)
}

// parseEnvInstruction reads `ENV A=1 B=2` (or the legacy `ENV A 1`).
func parseEnvInstruction(args string) map[string]string {
	out := map[string]string{}
	fields := strings.Fields(args)
	if len(fields) > 0 && !strings.Contains(fields[0], "=") {
		out[fields[0]] = strings.Join(fields[1:], " ")
		return out
	}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		out[k] = strings.Trim(v, `"`)
	}
	return out
}

// sourceFolders lists the top-level folders of the repository that hold
// packages the binary is built from.
func sourceFolders(t *testing.T) []string {
	t.Helper()
	const module = "github.com/usersync/usersync/"
	list := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./cmd/usersync")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(pkg, module); ok {
			dir, _, _ := strings.Cut(rest, "/")
			seen[dir] = true
		}
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

package deploy_test

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// composeRun matches `docker compose [-f FILE]… run --rm SERVICE [ARGS]`.
var composeRun = regexp.MustCompile(`docker compose((?:\s+-f\s+\S+)*)(?:\s+--profile\s+\S+)?\s+run\s+--rm\s+([a-z][a-z0-9_-]*)(.*)`)

// TestComposeRunCommands: every `docker compose … run --rm SERVICE ARGS` in
// the docs names a usersync service of the compose files it gives, and ARGS
// are a usersync command with its flags (the image's entrypoint is
// usersync); and the docs say how to run `usersync auth login --no-browser`
// under Compose (Compose had no way to run it).
func TestComposeRunCommands(t *testing.T) {
	t.Parallel()
	login := false
	for _, doc := range docs {
		for _, b := range codeBlocks(readFile(t, doc)) {
			for _, line := range shellLines(b.text) {
				m := composeRun.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				where := doc + ": " + strings.TrimSpace(line)
				files := regexp.MustCompile(`-f\s+(\S+)`).FindAllStringSubmatch(m[1], -1)
				if len(files) == 0 {
					t.Errorf("%s: give the compose file (-f deploy/compose.yaml)", where)
					continue
				}
				svc, ok := get(composeFile(t, strings.TrimPrefix(files[0][1], "deploy/")), "services", m[2]).(map[string]any)
				if !ok || !strings.HasPrefix(str(svc["image"]), "usersync:") {
					t.Errorf("%s: %s is not a usersync service of %s", where, m[2], files[0][1])
					continue
				}
				args := strings.Fields(m[3])
				if i := slices.IndexFunc(args, isShellOperator); i >= 0 {
					args = args[:i]
				}
				if len(args) > 0 {
					checkArgs(t, where, args)
				}
				if len(args) >= 3 && args[0] == "auth" && args[1] == "login" && slices.Contains(args, "--no-browser") {
					login = true
					if env := composeEnv(svc); env["DATABASE_URL"] == "" {
						t.Errorf("%s: service %s has no DATABASE_URL: auth login stores the token in the warehouse", where, m[2])
					}
				}
			}
		}
	}
	if !login {
		t.Error("no doc says how to run usersync auth login --no-browser with docker compose … run --rm worker")
	}
}

// TestKubernetesAuthLoginPod: deploy/kubernetes/auth-login-pod.yaml runs
// `usersync auth login --no-browser` from the worker's image, with the
// worker's settings, database and credentials, reading the pasted address
// on stdin; and docs/operations.md runs and removes that pod.
func TestKubernetesAuthLoginPod(t *testing.T) {
	t.Parallel()
	k := loadKube(t)
	pod, ok := k.find("Pod", "usersync-auth-login")
	if !ok {
		t.Fatal("no Pod usersync-auth-login")
	}
	worker, ok := k.find("Deployment", "usersync-worker")
	if !ok {
		t.Fatal("no Deployment usersync-worker")
	}
	spec, _ := get(pod.v, "spec").(map[string]any)
	cs, wcs := usersyncContainers(spec), usersyncContainers(podSpec(worker))
	if len(cs) != 1 || len(wcs) != 1 {
		t.Fatalf("%s and %s: want one usersync container each", pod, worker)
	}
	c, wc := cs[0], wcs[0]
	args := strs(c["args"])
	checkArgs(t, pod.String(), args)
	if !slices.Equal(args[:min(2, len(args))], []string{"auth", "login"}) || !slices.Contains(args, "--no-browser") {
		t.Errorf("%s runs usersync %v, want auth login --no-browser", pod, args)
	}
	if c["stdin"] != true || str(spec["restartPolicy"]) != "Never" {
		t.Errorf("%s: needs stdin: true (the pasted address) and restartPolicy: Never (it runs once)", pod)
	}
	if image, _ := kustomizeImage(t, k); str(c["image"]) != image {
		t.Errorf("%s: image %s, want kustomization.yaml's %s: the pod is applied without kustomize", pod, str(c["image"]), image)
	}
	if !reflect.DeepEqual(c["envFrom"], wc["envFrom"]) {
		t.Errorf("%s: envFrom %v, want the worker's %v (the same settings)", pod, c["envFrom"], wc["envFrom"])
	}
	envOf := func(c map[string]any, name string) any {
		for _, e := range maps(c["env"]) {
			if str(e["name"]) == name {
				return e
			}
		}
		return nil
	}
	if e := envOf(c, "DATABASE_URL"); e == nil || !reflect.DeepEqual(e, envOf(wc, "DATABASE_URL")) {
		t.Errorf("%s: DATABASE_URL %v, want the worker's: the token is stored in its warehouse", pod, e)
	}
	mounts := secretMounts(t, k, pod.String(), c, spec)
	for _, e := range maps(c["env"]) {
		if name := str(e["name"]); strings.HasSuffix(name, "_FILE") {
			if dir := str(e["value"])[:strings.LastIndex(str(e["value"]), "/")]; mounts[dir] == nil {
				t.Errorf("%s: %s=%s is not in a mounted Secret (mounted: %v)", pod, name, str(e["value"]), mounts)
			}
		}
	}
	if get(spec, "securityContext", "runAsNonRoot") != true || get(c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("%s: the pod must run as non-root with a read-only root (the namespace enforces the restricted standard)", pod)
	}

	ops := readFile(t, "docs/operations.md")
	for _, want := range []string{"kubectl -n usersync create -f deploy/kubernetes/auth-login-pod.yaml",
		"kubectl -n usersync attach -i usersync-auth-login", "kubectl -n usersync delete pod usersync-auth-login"} {
		if !strings.Contains(ops, want) {
			t.Errorf("docs/operations.md does not say %q", want)
		}
	}
}

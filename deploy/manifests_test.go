package deploy_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// yamlDoc is one document of a YAML file under deploy/.
type yamlDoc struct {
	file string // relative to deploy/
	v    map[string]any
}

func (d yamlDoc) String() string {
	if name := str(get(d.v, "metadata", "name")); name != "" {
		return fmt.Sprintf("%s (%s %s)", d.file, str(d.v["kind"]), name)
	}
	return d.file
}

// loadYAML decodes every document of a YAML file (multi-document aware).
func loadYAML(t *testing.T, file string) []yamlDoc {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []yamlDoc
	for {
		var v map[string]any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if v != nil {
			docs = append(docs, yamlDoc{file: file, v: v})
		}
	}
}

// yamlFiles lists the YAML files under deploy/, except deploy/dev/.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == "dev" {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

func list(v any) []any { l, _ := v.([]any); return l }

func maps(v any) []map[string]any {
	var out []map[string]any
	for _, e := range list(v) {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func strs(v any) []string {
	var out []string
	for _, e := range list(v) {
		out = append(out, str(e))
	}
	return out
}

// TestYAMLParses parses every YAML file under deploy/.
func TestYAMLParses(t *testing.T) {
	t.Parallel()
	files := yamlFiles(t)
	if len(files) < 8 {
		t.Fatalf("found only %d YAML files under deploy/: %v", len(files), files)
	}
	for _, f := range files {
		if docs := loadYAML(t, f); len(docs) == 0 {
			t.Errorf("%s holds no document", f)
		}
	}
}

// kube holds the Kubernetes manifests, indexed by kind and name.
type kube struct {
	docs []yamlDoc
}

func loadKube(t *testing.T) kube {
	t.Helper()
	var k kube
	for _, f := range yamlFiles(t) {
		if strings.HasPrefix(f, "kubernetes"+string(filepath.Separator)) {
			k.docs = append(k.docs, loadYAML(t, f)...)
		}
	}
	return k
}

func (k kube) find(kind, name string) (yamlDoc, bool) {
	for _, d := range k.docs {
		if str(d.v["kind"]) == kind && str(get(d.v, "metadata", "name")) == name {
			return d, true
		}
	}
	return yamlDoc{}, false
}

func (k kube) kind(kind string) []yamlDoc {
	var out []yamlDoc
	for _, d := range k.docs {
		if str(d.v["kind"]) == kind {
			out = append(out, d)
		}
	}
	return out
}

// secretKeys returns the keys of a Secret, from stringData and data.
func secretKeys(d yamlDoc) map[string]string {
	out := map[string]string{}
	for _, field := range []string{"stringData", "data"} {
		if m, ok := d.v[field].(map[string]any); ok {
			for k, v := range m {
				out[k] = str(v)
			}
		}
	}
	return out
}

func podSpec(d yamlDoc) map[string]any {
	spec, _ := get(d.v, "spec", "template", "spec").(map[string]any)
	return spec
}

func usersyncContainers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range append(maps(spec["initContainers"]), maps(spec["containers"])...) {
		if strings.Contains(str(c["image"]), "usersync") {
			out = append(out, c)
		}
	}
	return out
}

// TestKubernetesManifests checks each manifest's identity and the links
// between them: the kustomization's list, the ConfigMaps and Secrets that
// containers read, the Service's selector and port, the ServiceMonitor's.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	k := loadKube(t)
	for _, d := range k.docs {
		if str(d.v["apiVersion"]) == "" || str(d.v["kind"]) == "" {
			t.Errorf("%s: no apiVersion or kind", d)
		}
		if str(d.v["kind"]) != "Kustomization" && str(get(d.v, "metadata", "name")) == "" {
			t.Errorf("%s: no metadata.name", d)
		}
	}

	kust := readFile(t, "deploy/kubernetes/kustomization.yaml")
	kdocs := k.kind("Kustomization")
	if len(kdocs) != 1 {
		t.Fatalf("want one kustomization.yaml, found %d", len(kdocs))
	}
	for _, r := range strs(kdocs[0].v["resources"]) {
		if _, err := os.Stat(filepath.Join("kubernetes", r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
	entries, err := os.ReadDir("kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" && !strings.Contains(kust, n) {
			t.Errorf("kustomization.yaml does not mention %s (list it, or name it in a comment if optional)", n)
		}
	}

	for _, cm := range k.kind("ConfigMap") {
		data, _ := get(cm.v, "data").(map[string]any)
		for key := range data {
			checkEnvName(t, cm.String(), key)
		}
	}
	for _, s := range k.kind("Secret") {
		for key := range secretKeys(s) {
			checkEnvName(t, s.String(), key)
		}
	}
	for _, d := range append(k.kind("Deployment"), k.kind("Job")...) {
		for _, c := range usersyncContainers(podSpec(d)) {
			checkContainer(t, k, d, c)
		}
	}

	svc, ok := k.find("Service", "usersync-worker")
	if !ok {
		t.Fatal("no Service usersync-worker")
	}
	worker, ok := k.find("Deployment", "usersync-worker")
	if !ok {
		t.Fatal("no Deployment usersync-worker")
	}
	podLabels, _ := get(worker.v, "spec", "template", "metadata", "labels").(map[string]any)
	if !selects(get(svc.v, "spec", "selector"), podLabels) {
		t.Errorf("%s: its selector does not match the worker pods' labels %v", svc, podLabels)
	}
	if !selects(get(worker.v, "spec", "selector", "matchLabels"), podLabels) {
		t.Errorf("%s: its selector does not match its own pods' labels", worker)
	}
	portNames := containerPortNames(podSpec(worker))
	var svcPorts []string
	for _, p := range maps(get(svc.v, "spec", "ports")) {
		svcPorts = append(svcPorts, str(p["name"]))
		if tp := str(p["targetPort"]); !slices.Contains(portNames, tp) {
			t.Errorf("%s: targetPort %s is not a port of the worker (%v)", svc, tp, portNames)
		}
	}
	if sm, ok := k.find("ServiceMonitor", "usersync-worker"); ok {
		svcLabels, _ := get(svc.v, "metadata", "labels").(map[string]any)
		if !selects(get(sm.v, "spec", "selector", "matchLabels"), svcLabels) {
			t.Errorf("%s does not select the Service's labels", sm)
		}
		for _, ep := range maps(get(sm.v, "spec", "endpoints")) {
			if !slices.Contains(svcPorts, str(ep["port"])) || str(ep["path"]) != "/metrics" {
				t.Errorf("%s: endpoint %v should scrape /metrics on a port of the Service (%v)", sm, ep, svcPorts)
			}
		}
	} else {
		t.Error("no ServiceMonitor usersync-worker")
	}
}

// selects reports whether every label of the selector is among labels.
func selects(selector any, labels map[string]any) bool {
	sel, ok := selector.(map[string]any)
	if !ok || len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if str(labels[k]) != str(v) {
			return false
		}
	}
	return true
}

func containerPortNames(spec map[string]any) []string {
	var out []string
	for _, c := range maps(spec["containers"]) {
		for _, p := range maps(c["ports"]) {
			out = append(out, str(p["name"]), str(p["containerPort"]))
		}
	}
	return out
}

// checkContainer checks a container running usersync: its command and flags,
// the variables it sets, the ConfigMaps and Secrets it reads, that each
// _FILE points at a key of a mounted Secret, and that the settings load.
func checkContainer(t *testing.T, k kube, d yamlDoc, c map[string]any) {
	t.Helper()
	where := fmt.Sprintf("%s container %s", d, str(c["name"]))
	if cmd := strs(c["command"]); len(cmd) > 0 {
		if args, ok := argsAfterUsersync(cmd); ok {
			checkArgs(t, where, append(args, strs(c["args"])...))
		}
	} else {
		checkArgs(t, where, strs(c["args"])) // the image's entrypoint is usersync
	}

	env := map[string]string{}
	for _, ef := range maps(c["envFrom"]) {
		if name := str(get(ef, "configMapRef", "name")); name != "" {
			cm, ok := k.find("ConfigMap", name)
			if !ok {
				t.Errorf("%s: envFrom names ConfigMap %s, which no manifest defines", where, name)
				continue
			}
			data, _ := get(cm.v, "data").(map[string]any)
			for key, v := range data {
				if !envNames()[key] {
					t.Errorf("%s: ConfigMap %s, read as the environment, sets %s, which usersync does not read", where, name, key)
				}
				env[key] = str(v)
			}
		}
		if name := str(get(ef, "secretRef", "name")); name != "" {
			if _, ok := k.find("Secret", name); !ok {
				t.Errorf("%s: envFrom names Secret %s, which no manifest defines", where, name)
			}
		}
	}
	mounts := secretMounts(t, k, where, c, podSpec(d))
	for _, e := range maps(c["env"]) {
		name := str(e["name"])
		checkEnvName(t, where, name)
		if ref, ok := get(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
			s, found := k.find("Secret", str(ref["name"]))
			if !found {
				t.Errorf("%s: %s reads Secret %s, which no manifest defines", where, name, str(ref["name"]))
				continue
			}
			v, has := secretKeys(s)[str(ref["key"])]
			if !has {
				t.Errorf("%s: %s reads key %s, which Secret %s lacks", where, name, str(ref["key"]), str(ref["name"]))
			}
			env[name] = v
			continue
		}
		if _, ok := e["valueFrom"]; ok {
			continue
		}
		env[name] = str(e["value"])
		if strings.HasSuffix(name, "_FILE") && strings.HasPrefix(name, "USERSYNC_") {
			checkSecretFile(t, where, name, env[name], mounts)
		}
	}
	loadsCleanly(t, where, env)
}

// secretMounts maps the mount paths of a container's Secret volumes to the
// files each provides.
func secretMounts(t *testing.T, k kube, where string, c, spec map[string]any) map[string][]string {
	t.Helper()
	volumes := map[string]map[string]any{}
	for _, v := range maps(spec["volumes"]) {
		volumes[str(v["name"])] = v
	}
	out := map[string][]string{}
	for _, m := range maps(c["volumeMounts"]) {
		v, ok := volumes[str(m["name"])]
		if !ok {
			t.Errorf("%s: mounts volume %s, which the pod does not define", where, str(m["name"]))
			continue
		}
		name := str(get(v, "secret", "secretName"))
		if name == "" {
			continue
		}
		s, ok := k.find("Secret", name)
		if !ok {
			t.Errorf("%s: mounts Secret %s, which no manifest defines", where, name)
			continue
		}
		var files []string
		if items := maps(get(v, "secret", "items")); len(items) > 0 {
			for _, it := range items {
				files = append(files, str(it["path"]))
			}
		} else {
			for key := range secretKeys(s) {
				files = append(files, key)
			}
		}
		out[str(m["mountPath"])] = files
	}
	return out
}

func checkSecretFile(t *testing.T, where, name, file string, mounts map[string][]string) {
	t.Helper()
	dir, base := path.Split(file)
	files, ok := mounts[strings.TrimSuffix(dir, "/")]
	if !ok {
		t.Errorf("%s: %s=%s is not in a mounted Secret (mounted: %v)", where, name, file, mounts)
		return
	}
	if !slices.Contains(files, base) {
		t.Errorf("%s: %s=%s, but the Secret mounted there has no key %s (it has %v)", where, name, file, base, files)
	}
}

// TestKubernetesWorker checks what running the worker needs: two replicas,
// probes on the right endpoints and port, a grace period longer than the
// shutdown, a locked-down security context and memory sized from the
// benchmarks.
func TestKubernetesWorker(t *testing.T) {
	t.Parallel()
	k := loadKube(t)
	d, ok := k.find("Deployment", "usersync-worker")
	if !ok {
		t.Fatal("no Deployment usersync-worker")
	}
	if r := str(get(d.v, "spec", "replicas")); r != "2" {
		t.Errorf("%s: %s replicas, want 2", d, r)
	}
	spec := podSpec(d)
	cs := usersyncContainers(spec)
	if len(cs) != 1 {
		t.Fatalf("%s: want one usersync container, found %d", d, len(cs))
	}
	c := cs[0]
	cm, _ := k.find("ConfigMap", "usersync-config")
	settings, _ := get(cm.v, "data").(map[string]any)

	grace, err := strconv.Atoi(str(spec["terminationGracePeriodSeconds"]))
	if err != nil {
		t.Errorf("%s: terminationGracePeriodSeconds not set", d)
	}
	checkGrace(t, d.String(), time.Duration(grace)*time.Second, str(settings["USERSYNC_SHUTDOWN_TIMEOUT"]))

	_, port, _ := strings.Cut(str(settings["USERSYNC_HTTP_ADDR"]), ":")
	names := map[string]string{}
	for _, p := range maps(c["ports"]) {
		names[str(p["name"])] = str(p["containerPort"])
	}
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		path, pport := str(get(c, probe, "httpGet", "path")), str(get(c, probe, "httpGet", "port"))
		if path != want {
			t.Errorf("%s: %s checks %q, want %s", d, probe, path, want)
		}
		if n, ok := names[pport]; ok {
			pport = n
		}
		if pport != port {
			t.Errorf("%s: %s uses port %s, but the worker listens on %s (USERSYNC_HTTP_ADDR %s)", d, probe, pport, port,
				str(settings["USERSYNC_HTTP_ADDR"]))
		}
	}

	if get(spec, "securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: the pod is not runAsNonRoot", d)
	}
	sc := get(c, "securityContext")
	if get(sc, "readOnlyRootFilesystem") != true || get(sc, "allowPrivilegeEscalation") != false ||
		!slices.Contains(strs(get(sc, "capabilities", "drop")), "ALL") {
		t.Errorf("%s: the container should have a read-only root, no privilege escalation and no capabilities: %v", d, sc)
	}
	if m := str(get(c, "resources", "limits", "memory")); m == "" || str(get(c, "resources", "requests", "memory")) == "" {
		t.Errorf("%s: memory request and limit must be set (a sync peaks near 90 MB, a large snapshot near 300 MB)", d)
	}
	mounted := map[string]string{} // mount path: volume
	for _, m := range maps(c["volumeMounts"]) {
		mounted[str(m["mountPath"])] = str(m["name"])
	}
	if _, ok := mounted["/tmp"]; !ok {
		t.Errorf("%s: nothing is mounted at /tmp, which the read-only root makes unwritable", d)
	}
	checkSnapshotsShared(t, d, spec, mounted, str(settings["USERSYNC_SNAPSHOT_DIR"]))
}

// checkSnapshotsShared: the workers' snapshots go where analysts can read
// them and every replica writes: S3, or a folder on a
// mounted PersistentVolumeClaim, never a pod's own emptyDir.
func checkSnapshotsShared(t *testing.T, d yamlDoc, spec map[string]any, mounted map[string]string, dir string) {
	t.Helper()
	switch {
	case dir == "off" || strings.HasPrefix(dir, "s3://"):
		return
	case dir == "":
		t.Errorf("%s: USERSYNC_SNAPSHOT_DIR is not set in the ConfigMap: say where snapshots go (S3 or a shared volume)", d)
		return
	}
	volume, ok := mounted[dir]
	if !ok {
		t.Errorf("%s: nothing is mounted at USERSYNC_SNAPSHOT_DIR %s, which the read-only root makes unwritable", d, dir)
		return
	}
	for _, v := range maps(spec["volumes"]) {
		if str(v["name"]) == volume && get(v, "persistentVolumeClaim", "claimName") == nil {
			t.Errorf("%s: snapshots go to volume %s, not a PersistentVolumeClaim: each pod's own folder, lost with it and out of analysts' reach", d, volume)
		}
	}
}

// kustomizeImage returns the image kustomization.yaml gives the usersync
// containers (newName:newTag) and its tag.
func kustomizeImage(t *testing.T, k kube) (image, tag string) {
	t.Helper()
	for _, d := range k.kind("Kustomization") {
		for _, im := range maps(d.v["images"]) {
			if str(im["name"]) == "usersync" {
				return str(im["newName"]) + ":" + str(im["newTag"]), str(im["newTag"])
			}
		}
	}
	t.Fatal("kustomization.yaml sets no image for usersync")
	return "", ""
}

// TestKubernetesMigrateJob checks the migration Job, named per release
// (under one name, its immutable pod template had to be
// deleted by hand before each upgrade).
func TestKubernetesMigrateJob(t *testing.T) {
	t.Parallel()
	k := loadKube(t)
	jobs := k.kind("Job")
	if len(jobs) != 1 {
		t.Fatalf("want one Job, the migration, found %d", len(jobs))
	}
	d := jobs[0]
	_, tag := kustomizeImage(t, k)
	if want := "usersync-migrate-" + tag; str(get(d.v, "metadata", "name")) != want {
		t.Errorf("%s: the migrate Job is named %s, want %s: its name carries the release (kustomization.yaml's newTag), so that applying a new release creates a new Job",
			d, str(get(d.v, "metadata", "name")), want)
	}
	cs := usersyncContainers(podSpec(d))
	if len(cs) != 1 || !slices.Equal(strs(cs[0]["args"]), []string{"migrate"}) {
		t.Errorf("%s: should run usersync migrate", d)
	}
	for _, f := range []string{"backoffLimit", "ttlSecondsAfterFinished"} {
		if get(d.v, "spec", f) == nil {
			t.Errorf("%s: spec.%s is not set", d, f)
		}
	}
	if get(podSpec(d), "securityContext", "runAsNonRoot") != true {
		t.Errorf("%s: the pod is not runAsNonRoot", d)
	}
}

// composeFile returns a Compose file's one document, with YAML merge keys
// applied by the decoder.
func composeFile(t *testing.T, file string) map[string]any {
	t.Helper()
	docs := loadYAML(t, file)
	if len(docs) != 1 {
		t.Fatalf("%s: want one document, found %d", file, len(docs))
	}
	return docs[0].v
}

var interpolation = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?]([^}]*))?\}`)

// composeEnv returns a service's environment (map or list form), with
// ${VAR:-default} interpolations resolved to their defaults.
func composeEnv(svc any) map[string]string {
	out := map[string]string{}
	resolve := func(v string) string {
		return interpolation.ReplaceAllString(v, "$2")
	}
	switch env := get(svc, "environment").(type) {
	case map[string]any:
		for k, v := range env {
			out[k] = resolve(str(v))
		}
	case []any:
		for _, e := range env {
			k, v, _ := strings.Cut(str(e), "=")
			out[k] = resolve(v)
		}
	}
	return out
}

// TestCompose checks deploy/compose.yaml and its simulator override: the
// services and their order, every usersync command and variable, the secrets
// behind the _FILE variables, the grace period, and that plain HTTP to the
// simulator is allowed only by the override.
func TestCompose(t *testing.T) {
	t.Parallel()
	c := composeFile(t, "compose.yaml")
	services, _ := c["services"].(map[string]any)
	for _, name := range []string{"postgres", "migrate", "worker", "simulate"} {
		if _, ok := services[name]; !ok {
			t.Errorf("compose.yaml: no service %s", name)
		}
	}
	if get(services, "postgres", "healthcheck", "test") == nil || len(list(get(services, "postgres", "volumes"))) == 0 {
		t.Error("compose.yaml: postgres needs a healthcheck and a volume")
	}
	for svc, dep := range map[string][2]string{
		"migrate": {"postgres", "service_healthy"},
		"worker":  {"migrate", "service_completed_successfully"},
	} {
		if got := str(get(services, svc, "depends_on", dep[0], "condition")); got != dep[1] {
			t.Errorf("compose.yaml: %s should depend on %s with condition %s, not %q", svc, dep[0], dep[1], got)
		}
	}
	if !slices.Contains(strs(get(services, "simulate", "profiles")), "simulator") {
		t.Error("compose.yaml: simulate should be under the profile simulator")
	}
	worker := services["worker"]
	if r := str(get(worker, "restart")); r != "unless-stopped" {
		t.Errorf("compose.yaml: worker restart is %q, want unless-stopped", r)
	}
	if !slices.ContainsFunc(strs(get(worker, "ports")), func(p string) bool { return strings.HasSuffix(p, ":9090") }) {
		t.Error("compose.yaml: the worker does not publish port 9090")
	}
	grace, err := time.ParseDuration(str(get(worker, "stop_grace_period")))
	if err != nil {
		t.Errorf("compose.yaml: worker stop_grace_period: %v", err)
	}
	checkGrace(t, "compose.yaml worker", grace, composeEnv(worker)["USERSYNC_SHUTDOWN_TIMEOUT"])

	secrets, _ := c["secrets"].(map[string]any)
	for name, svc := range services {
		where := "compose.yaml service " + name
		env := composeEnv(svc)
		checkComposeSecrets(t, where, svc, env, secrets)
		if !strings.Contains(str(get(svc, "image")), "usersync") {
			continue
		}
		checkArgs(t, where, strs(get(svc, "command")))
		for k := range env {
			checkEnvName(t, where, k)
		}
		if _, ok := env["USERSYNC_ALLOW_INSECURE_HTTP"]; ok {
			t.Errorf("%s sets USERSYNC_ALLOW_INSECURE_HTTP: only compose.simulator.yaml may", where)
		}
		loadsCleanly(t, where, env)
	}

	override := composeFile(t, "compose.simulator.yaml")
	oenv := composeEnv(get(override, "services", "worker"))
	for k := range oenv {
		checkEnvName(t, "compose.simulator.yaml worker", k)
	}
	if oenv["USERSYNC_ALLOW_INSECURE_HTTP"] != "true" || !strings.HasPrefix(oenv["USERSYNC_API_URL"], "http://simulate:") {
		t.Errorf("compose.simulator.yaml should point the worker at http://simulate:… and allow insecure HTTP: %v", oenv)
	}
	merged := composeEnv(worker)
	for k, v := range oenv {
		merged[k] = v
	}
	loadsCleanly(t, "compose.yaml + compose.simulator.yaml worker", merged)
	simArgs := strs(get(services, "simulate", "command"))
	if i := slices.Index(simArgs, "--addr"); i < 0 || i+1 >= len(simArgs) || !strings.HasSuffix(oenv["USERSYNC_API_URL"], ":"+strings.Split(simArgs[i+1], ":")[1]) {
		t.Errorf("the simulator listens on %v, but the override's USERSYNC_API_URL is %s", simArgs, oenv["USERSYNC_API_URL"])
	}
}

var secretPath = regexp.MustCompile(`/run/secrets/([A-Za-z0-9_.-]+)`)

// checkComposeSecrets checks that every /run/secrets/<name> a service's
// environment names is a secret the service mounts and the file defines.
func checkComposeSecrets(t *testing.T, where string, svc any, env map[string]string, defined map[string]any) {
	t.Helper()
	mounted := map[string]bool{}
	for _, s := range list(get(svc, "secrets")) {
		name := str(s)
		if m, ok := s.(map[string]any); ok {
			name = str(m["source"])
		}
		mounted[name] = true
		if _, ok := defined[name]; !ok {
			t.Errorf("%s: mounts secret %s, which the top-level secrets do not define", where, name)
		}
	}
	for k, v := range env {
		for _, m := range secretPath.FindAllStringSubmatch(v, -1) {
			if !mounted[m[1]] {
				t.Errorf("%s: %s names /run/secrets/%s, a secret the service does not mount", where, k, m[1])
			}
		}
	}
}

// TestKubernetesMemoryAboveGOMEMLIMIT: the worker container's memory limit
// (an OOM kill when crossed) lies above GOMEMLIMIT plus the binary's pages
// plus a tenth of GOMEMLIMIT, the rule TestSystemdMemoryAboveGOMEMLIMIT holds
// the systemd unit to.
func TestKubernetesMemoryAboveGOMEMLIMIT(t *testing.T) {
	t.Parallel()
	d, ok := loadKube(t).find("Deployment", "usersync-worker")
	if !ok {
		t.Fatal("no Deployment usersync-worker")
	}
	c := usersyncContainers(podSpec(d))[0]
	env := map[string]string{}
	for _, e := range maps(c["env"]) {
		env[str(e["name"])] = str(e["value"])
	}
	limit, err := parseGoMemLimit(env["GOMEMLIMIT"])
	if err != nil {
		t.Fatalf("%s: GOMEMLIMIT: %v", d, err)
	}
	max, err := parseGoMemLimit(strings.TrimSuffix(str(get(c, "resources", "limits", "memory")), "i") + "iB")
	if err != nil {
		t.Fatalf("%s: limits.memory: %v", d, err)
	}
	fi, err := os.Stat(releaseBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	if want := limit + fi.Size() + limit/10; max < want {
		t.Errorf("%s: limits.memory (%d MiB) is below GOMEMLIMIT (%d MiB) + the binary (%d MiB) + a tenth of GOMEMLIMIT = %d MiB: the pod would be killed before its collector works harder",
			d, max/mib, limit/mib, fi.Size()/mib, want/mib)
	}
}

package apisim

import (
	"net/http"
	"testing"

	"github.com/usersync/usersync/schema"
)

// TestTypesFollowTheCatalog: the simulator serves the catalog's resources
// and no other, each under its path, the kinds it names in code are the
// catalog's, and every dimension has resources to list.
func TestTypesFollowTheCatalog(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Users: 40})
	res := schema.Resources()
	if len(e.sim.types) != len(res) {
		t.Fatalf("the simulator serves %d types, the catalog has %d resources", len(e.sim.types), len(res))
	}
	for i, r := range res {
		if typ := e.sim.types[i]; typ.name != r.Type || typ.path != r.Path || typ.kind != resKind(i) {
			t.Errorf("served type %d is %s at /%s, the catalog's is %s at /%s", i, typ.name, typ.path, r.Type, r.Path)
		}
		if i > 0 && len(e.sim.Resources(r.Type)) == 0 {
			t.Errorf("no %s to list", r.Type)
		}
		e.getDoc("/api/v2/"+r.Path+"?page[size]=1", http.StatusOK)
	}
	for kind, typ := range map[resKind]string{kindUser: "user", kindTeam: "team", kindRole: "role", kindProfile: "profile"} {
		if got := kindOfType(typ); got != kind {
			t.Errorf("kindOfType(%q) = %d, want %d", typ, got, kind)
		}
	}
	if kindOfType("mailbox") != kindNone || e.sim.Resources("mailbox") != nil {
		t.Error("a type the catalog lacks is served")
	}
	if got, want := e.sim.nthDimension(len(res)-1), kindTeam; got != want {
		t.Errorf("the round-robin over %d dimensions gives %d after the last, want %d", len(res)-1, got, want)
	}
}

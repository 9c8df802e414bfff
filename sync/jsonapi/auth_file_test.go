package jsonapi

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestFileTokenPicksUpAReplacedToken: a token revoked by the API (401) and
// replaced in its file is read again and sent, without a new client; while
// the file holds the refused token, the 401 stands.
func TestFileTokenPicksUpAReplacedToken(t *testing.T) {
	t.Parallel()
	var accepted atomic.Value
	accepted.Store("first-token")
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+accepted.Load().(string) {
			writeDoc(w, http.StatusUnauthorized, `{"errors":[{"status":"401","title":"Unauthorized"}]}`)
			return
		}
		writeDoc(w, http.StatusOK, pageBody(`{"next":null}`, 1))
	})
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("first-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := FileToken(path)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL, newFakeClock(t), func(o *Options) { o.Auth = auth })
	get := func() error { _, err := c.Collection("users", Query{}).Next(context.Background()); return err }
	if err := get(); err != nil {
		t.Fatalf("with the first token: %v", err)
	}
	accepted.Store("second-token") // the API revokes the first
	if err := get(); err == nil {
		t.Fatal("a revoked token still in its file was accepted")
	}
	if err := os.WriteFile(path, []byte("second-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatalf("after the file was given the new token: %v", err)
	}
	if _, err := FileToken(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("FileToken of a missing file: no error")
	}
}

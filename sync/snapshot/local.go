package snapshot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Modes of what Local creates: the owner writes, the group (analysts' tools)
// reads, others get nothing. The umask may take more away.
const (
	fileMode   = 0o640
	folderMode = 0o750
)

// Local is a Destination in a local folder. Each object is written to a
// temporary file next to its final name (".part-00000.parquet.tmp-<random>"),
// fsynced, closed and renamed into place, and the folder is fsynced,
// so a crash or a full disk never leaves a partial file under a final name.
type Local struct {
	root string // absolute, symlinks resolved
}

var _ Destination = (*Local)(nil)

// tempMarker separates a final name from the random suffix of its temporary
// file.
const tempMarker = ".tmp-"

// NewLocal returns a Destination rooted at dir, creating dir if needed. A
// dir that is (or lies under) a symlink is resolved once here: List walks
// from the root, and a walk does not enter a symlinked root, which would
// hide every snapshot from retention.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving snapshot folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, folderMode); err != nil { //nolint:gosec // G703: the operator's own setting names the folder
		return nil, fmt.Errorf("creating snapshot folder: %w", err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolving snapshot folder %s: %w", dir, err)
	}
	return &Local{root: root}, nil
}

// String returns the folder's absolute path.
func (l *Local) String() string { return l.root }

// Create opens a temporary file in name's folder, creating folders as needed.
func (l *Local) Create(_ context.Context, name string) (Object, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(filepath.Join(l.root, filepath.FromSlash(name)))
	if err := l.mkdirAll(dir); err != nil {
		return nil, err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("drawing a temporary name: %w", err)
	}
	tmp := filepath.Join(dir, "."+base+tempMarker+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode) //nolint:gosec // G302: the group (analysts' tools) reads the snapshots
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", tmp, err)
	}
	return &localObject{f: f, tmp: tmp, final: filepath.Join(dir, base)}, nil
}

// mkdirAll creates dir and its missing parents under the root, fsyncing each
// parent of a created folder so the new folder survives a crash.
func (l *Local) mkdirAll(dir string) error {
	rel, err := filepath.Rel(l.root, filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("locating %s: %w", dir, err)
	}
	cur := l.root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		err := os.Mkdir(next, folderMode)
		switch {
		case err == nil:
			if err := syncDir(cur); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrExist):
			return fmt.Errorf("creating folder: %w", err)
		}
		cur = next
	}
	return nil
}

// Open opens a committed file.
func (l *Local) Open(_ context.Context, name string) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(l.root, filepath.FromSlash(name))) //nolint:gosec // G703: checkName keeps name under the root
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return f, nil
}

// List walks the folder under prefix (a folder when it ends in "/", else a
// name prefix), temporary files marked Partial. A symbolic link fails it with
// a LinkError, because skipping one hid its snapshots from retention; only a
// table's stable link is reported, with its Target.
func (l *Local) List(ctx context.Context, prefix string) ([]Entry, error) {
	start := l.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(l.root, filepath.FromSlash(prefix[:i]))
	}
	var out []Entry
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 && (p == start || strings.HasPrefix(name, prefix)) {
			target, _ := os.Readlink(p) // to say where it points, or which snapshot a stable link names
			if p != start && isCurrentLink(d.Name(), target) {
				partial := d.Name() != currentName
				out = append(out, Entry{Name: name, Partial: partial, Target: target})
				return nil
			}
			return &LinkError{Path: p, Target: target}
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		base := d.Name()
		partial := strings.HasPrefix(base, ".") && strings.Contains(base, tempMarker)
		out = append(out, Entry{Name: name, Size: info.Size(), Partial: partial})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", l.root, err)
	}
	return out, nil
}

// Remove deletes a file, fsyncs its folder, and removes the folders it
// leaves empty up to the root.
func (l *Local) Remove(_ context.Context, e Entry) error {
	if err := checkName(e.Name); err != nil {
		return err
	}
	p := filepath.Join(l.root, filepath.FromSlash(e.Name))
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) { //nolint:gosec // G703: checkName keeps p under the root
		return fmt.Errorf("removing %s: %w", e.Name, err)
	}
	dir := filepath.Dir(p)
	if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for dir != l.root && strings.HasPrefix(dir, l.root) {
		if os.Remove(dir) != nil { //nolint:gosec // G703: under the root; not empty (or gone): stop climbing
			break
		}
		dir = filepath.Dir(dir)
	}
	return nil
}

// localObject is a file being written under a temporary name. It is not an
// io.Closer, so a Parquet writer's Close cannot close the file before it is
// fsynced; the Parquet writer buffers in front of it.
type localObject struct {
	f     *os.File
	tmp   string
	final string
	done  bool
}

func (o *localObject) Write(p []byte) (int, error) { return o.f.Write(p) }

// Commit fsyncs and closes the temporary file, renames it to its final name
// and fsyncs the folder.
func (o *localObject) Commit(_ context.Context) error {
	if o.done {
		return errors.New("object already committed or aborted")
	}
	o.done = true
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp, o.final)
	}
	if err != nil {
		_ = os.Remove(o.tmp) // best effort: a leftover is cleaned up by the next Write
		return fmt.Errorf("committing %s: %w", o.final, err)
	}
	return syncDir(filepath.Dir(o.final))
}

// Abort closes and removes the temporary file.
func (o *localObject) Abort(_ context.Context) error {
	if o.done {
		return nil
	}
	o.done = true
	_ = o.f.Close() // the file is being discarded; its close error does not matter
	if err := os.Remove(o.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", o.tmp, err)
	}
	return nil
}

// syncDir fsyncs a folder so that entries created, renamed or removed in it
// are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir) //nolint:gosec // G703: a folder of the destination, whose names checkName checked
	if err != nil {
		return fmt.Errorf("opening folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing folder %s: %w", dir, err)
	}
	return nil
}

// isCurrentLink reports whether a link named base that points to target is
// a stable link SetCurrent wrote (or its temporary file): it can only name a
// snapshot folder next to it, never lead out of the root.
func isCurrentLink(base, target string) bool {
	return validID(target) && (base == currentName || strings.HasPrefix(base, "."+currentName+tempMarker))
}

// SetCurrent points the link at target, a folder next to it, with a
// temporary link renamed over the old one, so a reader resolves either the
// old snapshot or the new one, and fsyncs the folder.
func (l *Local) SetCurrent(_ context.Context, link, target string, _ []string) error {
	if err := checkName(link); err != nil {
		return err
	}
	if err := checkName(target); err != nil {
		return err
	}
	dir, id := path.Split(target)
	if dir != path.Dir(link)+"/" || !isCurrentLink(path.Base(link), id) {
		return fmt.Errorf("a stable link %s cannot point to %s", link, target)
	}
	p := filepath.Join(l.root, filepath.FromSlash(link))
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("drawing a temporary name: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+tempMarker+hex.EncodeToString(rnd[:]))
	if err := os.Symlink(id, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", link, err)
	}
	if err := os.Rename(tmp, p); err != nil { //nolint:gosec // G703: checkName keeps the link under the root
		_ = os.Remove(tmp) //nolint:gosec // G703: as above; best effort, the next Write removes a leftover
		return fmt.Errorf("replacing %s: %w", link, err)
	}
	return syncDir(filepath.Dir(p))
}

//go:build usersync_poison

package jsonapi

// poison overwrites a released body with 0xDB bytes, so that anything still
// referring to it (a row's string that outlived its page: see Page.Release)
// reads garbage at once instead of a later page's bytes some time later.
// `make test` runs the sync's tests built with the usersync_poison tag.
func poison(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xDB
	}
}

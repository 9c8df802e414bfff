package alonetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

const labelKey = "usersync_alonetest"

// Run calls f and fails t if a goroutine that f started, directly or not,
// is still in usersync code a second after f returns. Goroutines inherit
// the profiler labels of the goroutine that starts them, so f runs under a
// label of its own and those are the goroutines that carry it.
func Run(t testing.TB, ctx context.Context, f func(ctx context.Context)) {
	t.Helper()
	id := rand.Text()
	pprof.Do(ctx, pprof.Labels(labelKey, id), f)
	// A goroutine may still be returning after its last effect (a closed
	// channel): what is left after a second is left for good.
	left := running(id)
	for wait := time.Millisecond; len(left) > 0 && wait < time.Second; wait *= 2 {
		time.Sleep(wait)
		left = running(id)
	}
	if len(left) > 0 {
		t.Errorf("goroutines outlived the call that started them (count @ stack):\n%s", strings.Join(left, "\n\n"))
	}
}

// running returns the stacks of the goroutines labelled id that are in
// usersync code.
func running(id string) []string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	want := fmt.Sprintf("# labels: {%q:%q}", labelKey, id)
	var left []string
	for _, stack := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(stack, want) && strings.Contains(stack, "github.com/usersync/usersync/") {
			left = append(left, stack)
		}
	}
	return left
}

package jobs

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestIsDueNow: a job is due once its schedule's next tick after the last
// job has come, and when none ran.
func TestIsDueNow(t *testing.T) {
	hourly, err := cron.ParseStandard("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	for _, tt := range []struct {
		name string
		last *time.Time
		now  string
		want bool
	}{
		{"never ran", nil, "2026-01-01T10:30:00Z", true},
		{"ran since the tick", at("2026-01-01T10:00:01Z"), "2026-01-01T10:30:00Z", false},
		{"a tick passed", at("2026-01-01T09:59:00Z"), "2026-01-01T10:00:00Z", true},
	} {
		if got := isDueNow(hourly, tt.last, *at(tt.now)); got != tt.want {
			t.Errorf("%s: due %v, want %v", tt.name, got, tt.want)
		}
	}
}

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

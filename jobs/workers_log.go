package jobs

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// River logs what it sees of a job (its failure and retry, a panic, a
// stuck job, a cancellation from the job UI) with the job's id and kind,
// never its arguments, so that its lines would not say whose job it was.
// jobAccounts remembers the account of each job this process works, from
// the moment the job starts until jobAccountKept after it ends (River logs
// a job's outcome just after its Work returns), and River's logger
// (accountHandler) adds account=NAME to a line whose job_id is one of them.

// jobAccountKept is how long a finished job's account is remembered for
// River's lines about its outcome.
const jobAccountKept = time.Minute

type jobAccounts struct {
	mu   sync.Mutex
	jobs map[int64]jobAccount
}

type jobAccount struct {
	name  string
	ended time.Time // zero while the job runs
}

func newJobAccounts() *jobAccounts { return &jobAccounts{jobs: map[int64]jobAccount{}} }

// begin records that job id of account name started, and forgets the jobs
// that ended longer than jobAccountKept ago.
func (j *jobAccounts) begin(id int64, name string, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for other, a := range j.jobs {
		if !a.ended.IsZero() && now.Sub(a.ended) > jobAccountKept {
			delete(j.jobs, other)
		}
	}
	j.jobs[id] = jobAccount{name: name}
}

// end records that job id ended.
func (j *jobAccounts) end(id int64, now time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if a, ok := j.jobs[id]; ok {
		a.ended = now
		j.jobs[id] = a
	}
}

// of returns the account of job id, if this process worked it lately.
func (j *jobAccounts) of(id int64) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	a, ok := j.jobs[id]
	return a.name, ok
}

// jobAccountOf is the account of job, false for the fleet's tick (which is
// every account's) and for another program's jobs.
func jobAccountOf(job *rivertype.JobRow) (string, bool) {
	switch job.Kind {
	case KindSync, KindBackfill, KindReconcile, KindSnapshot:
	default:
		return "", false
	}
	var args struct {
		Account string `json:"account"`
	}
	if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
		return "", false
	}
	return AccountName(args.Account), true
}

// accountMiddleware is the worker middleware that records each job's
// account while it runs and puts it in the job's context (AccountOf).
type accountMiddleware struct {
	river.MiddlewareDefaults
	jobs *jobAccounts
}

var _ rivertype.WorkerMiddleware = (*accountMiddleware)(nil)

// Work implements rivertype.WorkerMiddleware.
func (m *accountMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	name, ok := jobAccountOf(job)
	if !ok {
		return doInner(ctx)
	}
	m.jobs.begin(job.ID, name, time.Now())
	defer func() { m.jobs.end(job.ID, time.Now()) }()
	return doInner(WithAccount(ctx, name))
}

type accountKey struct{}

// WithAccount returns ctx naming the account whose job runs in it.
func WithAccount(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, accountKey{}, name)
}

// AccountOf returns the account whose job runs in ctx, false outside a
// job: what a job's API client calls (its authenticator) may name it.
func AccountOf(ctx context.Context) (string, bool) {
	name, ok := ctx.Value(accountKey{}).(string)
	return name, ok
}

// riverLogger is River's logger: logger (nil: none), whose lines about a
// job this process worked name the job's account.
func riverLogger(logger *slog.Logger, jobs *jobAccounts) *slog.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return slog.New(accountHandler{Handler: logger.Handler(), jobs: jobs})
}

// accountHandler is River's log handler: a line with the job_id of a job
// this process worked lately, and no account, gets account=NAME.
type accountHandler struct {
	slog.Handler
	jobs *jobAccounts
}

// Handle implements slog.Handler.
func (h accountHandler) Handle(ctx context.Context, r slog.Record) error {
	var id int64
	found, named := false, false
	r.Attrs(func(a slog.Attr) bool {
		switch {
		case a.Key == "job_id" && a.Value.Kind() == slog.KindInt64:
			id, found = a.Value.Int64(), true
		case a.Key == "account":
			named = true
		}
		return true
	})
	if found && !named {
		if name, ok := h.jobs.of(id); ok {
			r = r.Clone()
			r.AddAttrs(slog.String("account", name))
		}
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h accountHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return accountHandler{Handler: h.Handler.WithAttrs(attrs), jobs: h.jobs}
}

// WithGroup implements slog.Handler.
func (h accountHandler) WithGroup(name string) slog.Handler {
	return accountHandler{Handler: h.Handler.WithGroup(name), jobs: h.jobs}
}

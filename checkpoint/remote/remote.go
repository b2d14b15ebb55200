package remote

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// headerProbe is how many bytes the first request for a tensor file asks
// for, sized for safetensors: the 8-byte header length and 100,000 bytes
// of header. Range ends are inclusive: the request is "bytes=0-100007".
const headerProbe = 8 + 100_000

// jsonProbe is how much of an index.json or config.json the first request
// asks for: they are read whole, so one request fetches them.
const jsonProbe = 64 << 20

// Probe is how many bytes opening the remote file name reads at once: a
// tensor file's header (usually), another file whole.
func Probe(name string) int64 {
	if checkpoint.IsTensorFile(name) {
		return headerProbe
	}
	return jsonProbe
}

// maxAttempts is how often one request is tried: 5xx, 429 and dropped
// connections are retried with backoff.
const maxAttempts = 6

// maxRetryAfter is the longest Retry-After honoured; a server asking for
// longer gets an error saying so.
const maxRetryAfter = 2 * time.Minute

// Timeout is how long one request of opt may take.
func Timeout(opt *checkpoint.RemoteOptions) time.Duration {
	if opt.Timeout > 0 {
		return opt.Timeout
	}
	return checkpoint.DefaultTimeout
}

// waitKey carries WithWait's function in a context.
type waitKey struct{}

// WithWait returns a context in which retries wait through wait instead of
// sleeping: tests record the waits.
func WithWait(ctx context.Context, wait func(ctx context.Context, d time.Duration) error) context.Context {
	return context.WithValue(ctx, waitKey{}, wait)
}

// sleep waits d before a retry, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if w, ok := ctx.Value(waitKey{}).(func(context.Context, time.Duration) error); ok {
		return w(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Retry calls try until it succeeds, fails in a way not worth repeating
// (see Error.Temporary), or has been tried maxAttempts times, waiting
// between attempts as the server asked (Retry-After) or with backoff. A
// wait that ctx cuts short returns the last attempt's error.
func Retry(ctx context.Context, try func() error) error {
	for attempt := 0; ; attempt++ {
		err := try()
		ok, after := retryable(err)
		if err == nil || !ok || attempt+1 >= maxAttempts || after > maxRetryAfter {
			return err
		}
		if after <= 0 {
			after = backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= after {
			return err // no time left for another attempt
		}
		if sleep(ctx, after) != nil {
			return err
		}
	}
}

// A target is what a remote path names within its source: a file, an
// index, or (both empty) a directory to choose from.
type target struct {
	index string
	file  string
}

func (t target) name() string { return t.index + t.file }

func targetOf(name string) target {
	switch {
	case name == "":
		return target{}
	case checkpoint.IsIndex(name):
		return target{index: name}
	case checkpoint.IsTensorFile(name):
		return target{file: name}
	default:
		return target{}
	}
}

// splitTarget splits a remote path's part within its store into the
// directory and what it names there.
func splitTarget(p string) (dir string, tg target) {
	p = strings.Trim(p, "/")
	base := path.Base(p)
	if tg = targetOf(base); tg != (target{}) {
		dir = path.Dir(p)
		if dir == "." {
			dir = ""
		}
		return dir, tg
	}
	return p, target{}
}

// SplitTarget splits a path within a store (an object key, a path in a
// repository) into the folder and what it names there: a tensor file (see
// checkpoint.IsTensorFile), an index (checkpoint.IsIndex), or "" for the
// folder itself.
func SplitTarget(p string) (dir, name string) {
	dir, tg := splitTarget(p)
	return dir, tg.name()
}

// Entries lists, from names relative to a root, the files directly in it:
// what a directory listing would show.
func Entries(names []string) []checkpoint.Entry {
	var out []checkpoint.Entry
	for _, n := range names {
		if !strings.Contains(n, "/") {
			out = append(out, checkpoint.Entry{Name: n})
		}
	}
	slices.SortFunc(out, func(a, b checkpoint.Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Base is what every remote source shares: files opened ahead of being
// asked for, the version of every file opened, and the bounds on what the
// source's files buffer (read-ahead chunks, first requests). A source
// embeds it, sets OpenNow, opens its files with OpenFile, and gets its
// Open and Close from it.
type Base struct {
	// OpenNow opens a file of the source with a request.
	OpenNow func(ctx context.Context, name string) (checkpoint.File, error)

	mu sync.Mutex
	// ahead holds opens started before Open asked for them.
	ahead map[string]*pendingOpen
	// seen is the version of every file opened, by name.
	seen   map[string]checkpoint.FileVersion
	closed bool
	// opens are the background opens under way, and the closing of
	// files opened for an Open that gave up waiting.
	opens sync.WaitGroup

	pool   *chunkPool
	probes *byteBudget
}

type pendingOpen struct {
	done   chan struct{}
	cancel context.CancelFunc
	f      checkpoint.File
	err    error
}

func (b *Base) core() *Base { return b }

// bounds returns the source's read-ahead pool and probe budget.
func (b *Base) bounds() (*chunkPool, *byteBudget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pool == nil {
		b.pool, b.probes = newChunkPool(), newByteBudget(probeBudget)
	}
	return b.pool, b.probes
}

// prefetch starts opening names in the background; Open takes them, and
// Close closes those nobody took.
func (b *Base) prefetch(ctx context.Context, names ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if b.ahead == nil {
		b.ahead = map[string]*pendingOpen{}
	}
	for _, name := range names {
		if _, ok := b.ahead[name]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(ctx)
		p := &pendingOpen{done: make(chan struct{}), cancel: cancel}
		b.ahead[name] = p
		b.opens.Go(func() {
			defer close(p.done)
			p.f, p.err = b.OpenNow(ctx, name)
		})
	}
}

// keep hands an open file to the next Open of name.
func (b *Base) keep(name string, f checkpoint.File) {
	p := &pendingOpen{done: make(chan struct{}), cancel: func() {}, f: f}
	close(p.done)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		f.Close()
		return
	}
	if b.ahead == nil {
		b.ahead = map[string]*pendingOpen{}
	}
	b.ahead[name] = p
}

// Open returns a file opened ahead of time, else opens it now. An Open
// that ctx cuts short leaves the file opened ahead to be closed when its
// open ends.
func (b *Base) Open(ctx context.Context, name string) (checkpoint.File, error) {
	b.mu.Lock()
	p := b.ahead[name]
	delete(b.ahead, name)
	if p != nil {
		// Counted before the lock is dropped, so that Close waits for it
		// (a closed Base has no opens ahead).
		b.opens.Add(1)
	}
	b.mu.Unlock()
	if p != nil {
		defer b.opens.Done()
		select {
		case <-p.done:
			return p.f, p.err
		case <-ctx.Done():
			p.cancel()
			p.closeWhenDone()
			return nil, ctx.Err()
		}
	}
	return b.OpenNow(ctx, name)
}

// closeWhenDone waits for the open to end and closes what it opened.
func (p *pendingOpen) closeWhenDone() {
	<-p.done
	if p.f != nil {
		p.f.Close()
	}
}

// Close cancels the opens still under way and closes every file opened
// ahead that nobody took; the files Open returned are their callers' to
// close. checkpoint.Checkpoint.Close calls it for the sources it opened.
func (b *Base) Close() error {
	b.mu.Lock()
	b.closed = true
	pending := b.ahead
	b.ahead = nil
	b.mu.Unlock()
	for _, p := range pending {
		p.cancel()
	}
	for _, p := range pending {
		p.closeWhenDone()
	}
	b.opens.Wait()
	return nil
}

// Record notes the version of a file opened, for Versions.
func (b *Base) Record(v checkpoint.FileVersion) {
	b.mu.Lock()
	if b.seen == nil {
		b.seen = map[string]checkpoint.FileVersion{}
	}
	b.seen[v.Name] = v
	b.mu.Unlock()
}

// Versions lists the files opened, by name.
func (b *Base) Versions() []checkpoint.FileVersion {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]checkpoint.FileVersion, 0, len(b.seen))
	for _, v := range b.seen {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b checkpoint.FileVersion) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// A Source is a remote source built on Base, which it embeds.
type Source interface {
	checkpoint.RemoteSource
	core() *Base
}

// Locate is the end of a scheme's Opener for a source built on Base: it
// opens the file the path names (an error when it is missing, as for a
// local path), asking for config.json at the same time, and for a source
// that cannot list the files beside the weights too, so that the round
// trips overlap. name is "" for the source's root.
func Locate(ctx context.Context, src Source, name string) (*checkpoint.Location, error) {
	if name != "" {
		b := src.core()
		// The file named and config.json are read at once: two round
		// trips become one. A missing file named on the command line is
		// an error (exit 2), not a missing shard.
		b.prefetch(ctx, name, "config.json")
		if _, err := src.List(ctx); errors.Is(err, checkpoint.ErrNotListable) {
			// The files beside the weights are probed for by name (see
			// checkpoint.Companions): ask for them now, while the headers
			// come.
			b.prefetch(ctx, checkpoint.CompanionNames()...)
		}
		f, err := src.Open(ctx, name)
		if err != nil {
			b.Close() // the opens started with it
			return nil, pathError(src.Path(name), err)
		}
		b.keep(name, f)
	}
	return &checkpoint.Location{Source: src, Name: name}, nil
}

// pathError is one line naming the path and the cause.
func pathError(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", p, pe.Err)
	}
	if strings.HasPrefix(err.Error(), p) {
		return err
	}
	return fmt.Errorf("%s: %w", p, err)
}

// An Error is a request a remote store refused or could not answer. Its
// message names the file (never a signed URL) and the cause.
type Error struct {
	// Path names the file as reports do.
	Path string
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Cause says what happened, in words.
	Cause string
	// Temporary says the request is worth repeating (5xx, 429, a dropped
	// connection); RetryAfter is how long the store asked to wait first.
	Temporary  bool
	RetryAfter time.Duration
	// Err is what errors.Is finds: fs.ErrNotExist for a missing file,
	// fs.ErrPermission for a refused one, checkpoint.ErrChanged for one
	// replaced during the run.
	Err error
}

func (e *Error) Error() string { return e.Path + ": " + e.Cause }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// errIgnoresRange is a server that answered a ranged request with the
// whole file.
var errIgnoresRange = errors.New("the server ignores Range requests")

// NotFound is an Error for a missing file.
func NotFound(p string, status int, cause string) *Error {
	return &Error{Path: p, Status: status, Cause: cause, Err: fs.ErrNotExist}
}

// statusCause is an HTTP status in words, "HTTP 404 Not Found".
func statusCause(code int, text string) string {
	if text == "" {
		return fmt.Sprintf("HTTP %d", code)
	}
	return fmt.Sprintf("HTTP %d %s", code, text)
}

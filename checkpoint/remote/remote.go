package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Remote checkpoints are read where they are: https:// and http:// URLs,
// hf:// repositories on the Hugging Face Hub and s3:// prefixes. Each is a
// Source whose files are io.ReaderAt values doing ranged reads, so every
// check reads them as it reads local files. Opening reads only headers:
// a first request asks for the 8-byte header length and headerProbe bytes
// of header, a second one the rest of a longer header.

// headerProbe is how many bytes the first request for a .safetensors file
// asks for: the 8-byte header length and 100,000 bytes of header. Range
// ends are inclusive: the request is "bytes=0-100007".
const headerProbe = 8 + 100_000

// jsonProbe is how much of an index.json or config.json the first request
// asks for: they are read whole, so one request fetches them.
const jsonProbe = 64 << 20

// probeSize is how many bytes opening a remote file reads at once.
func probeSize(name string) int64 {
	if strings.HasSuffix(name, ".safetensors") {
		return headerProbe
	}
	return jsonProbe
}

// RemoteOptions configure remote paths.
type RemoteOptions struct {
	// Revision is the hf:// revision (branch, tag, commit or "refs/pr/3")
	// for a path that gives none with @REV; "" is main.
	Revision string
	// Timeout bounds each request (its answer and body); 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// NoSignRequest reads s3:// without credentials, as the AWS CLI's
	// --no-sign-request: public buckets.
	NoSignRequest bool

	// sleep waits between retries; tests record the waits instead.
	sleep func(ctx context.Context, d time.Duration) error
}

// DefaultTimeout bounds one request to a remote store.
const DefaultTimeout = 60 * time.Second

// maxAttempts is how often one request is tried: 5xx, 429 and dropped
// connections are retried with backoff.
const maxAttempts = 6

// maxRetryAfter is the longest Retry-After honoured; a server asking for
// longer gets an error saying so.
const maxRetryAfter = 2 * time.Minute

func (o *RemoteOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o *RemoteOptions) wait(ctx context.Context, d time.Duration) error {
	if o.sleep != nil {
		return o.sleep(ctx, d)
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

// A Remote says where a remote checkpoint was read from, as a report
// records it: never a signed URL or a credential.
type Remote struct {
	// Kind is "https", "http", "hf" or "s3".
	Kind string `json:"kind"`
	// Name is the resolved name: the URL without query or credentials,
	// hf://org/name@commit[/subdir], or s3://bucket/prefix.
	Name string `json:"name"`
	// Listed says whether the source could list its files: plain HTTP
	// cannot, so shards beside an index that it does not name
	// (unreferenced_shard) are not looked for.
	Listed bool `json:"listed"`
	// Offline is set when HF_HUB_OFFLINE made an hf:// path read only the
	// local hub cache.
	Offline bool `json:"offline,omitempty"`
	// Files are the files read, with the version each had.
	Files []FileVersion `json:"files,omitempty"`
}

// A FileVersion is which version of a remote file was read.
type FileVersion struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// ETag is the store's entity tag for the bytes read.
	ETag string `json:"etag,omitempty"`
	// SHA256 is the Git LFS object id the Hub lists for the file.
	SHA256 string `json:"sha256,omitempty"`
	// Cached says the file was read from the local hub cache.
	Cached bool `json:"cached,omitempty"`
}

// IsRemote reports whether path names a remote checkpoint: it starts with
// https://, http://, hf:// or s3://.
func IsRemote(path string) bool {
	for _, p := range []string{"https://", "http://", "hf://", "s3://"} {
		if len(path) >= len(p) && strings.EqualFold(path[:len(p)], p) {
			return true
		}
	}
	return false
}

// A remoteSource is a Source over the network.
type remoteSource interface {
	Source
	// remote describes the source as a report records it.
	remote() *Remote
}

// A target is what a remote path names within its source: a file, an
// index, or (both empty) a directory to choose from.
type target struct {
	index string
	file  string
}

func targetOf(name string) target {
	switch {
	case name == "":
		return target{}
	case strings.HasSuffix(name, ".index.json"):
		return target{index: name}
	case strings.HasSuffix(name, ".safetensors"):
		return target{file: name}
	default:
		return target{}
	}
}

// openRemote opens a checkpoint at a remote path.
func openRemote(ctx context.Context, p string, opt Options) (*Checkpoint, error) {
	scheme, _, _ := strings.Cut(p, "://")
	var (
		src remoteSource
		tg  target
		err error
		c   = &Checkpoint{Path: p}
	)
	switch strings.ToLower(scheme) {
	case "hf":
		var local string
		src, tg, local, err = newHFSource(ctx, p, &opt.Remote, c)
		if err == nil && local != "" {
			return openOffline(ctx, c, local, opt)
		}
	case "s3":
		src, tg, err = newS3Source(ctx, p, &opt.Remote)
	default:
		src, tg, err = newHTTPSource(ctx, p, &opt.Remote, c)
	}
	if err != nil {
		return nil, err
	}
	c.Source = src
	named := tg.index + tg.file // "" for the root, read as a directory
	if named != "" {
		// The file named and config.json are read at once: two round
		// trips become one. A missing file named on the command line is
		// an error (exit 2), not a missing shard.
		prefetch(ctx, src, named, "config.json")
		if _, err := src.List(ctx); errors.Is(err, ErrNotListable) {
			// The files beside the weights are probed for by name (see
			// Companions): ask for them now, while the headers come.
			prefetch(ctx, src, CompanionNames()...)
		}
		f, err := src.Open(ctx, named)
		if err != nil {
			return nil, pathError(src.Path(named), err)
		}
		keep(src, named, f)
	}
	if _, err := c.opened(c.open(ctx, named, opt)); err != nil {
		return nil, err
	}
	c.Remote = src.remote()
	return c, nil
}

// openOffline opens an hf:// path from the local hub cache only.
func openOffline(ctx context.Context, c *Checkpoint, local string, opt Options) (*Checkpoint, error) {
	lc, err := Open(ctx, local, Options{Variant: opt.Variant, AnyVariant: opt.AnyVariant})
	if err != nil {
		return nil, err
	}
	lc.Path, lc.Hub, lc.Remote = c.Path, c.Hub, c.Remote
	return lc, nil
}

// openConcurrency is how many shard headers are read at once: more for
// remote sources, where each read is a round trip.
func (c *Checkpoint) openConcurrency() int {
	n := 4 * runtime.GOMAXPROCS(0)
	if _, ok := c.Source.(remoteSource); ok {
		n = max(n, 32)
	}
	return n
}

// IsRemote reports whether the checkpoint's files are read over the
// network; value comparison then keeps more reads in flight.
func (c *Checkpoint) IsRemote() bool {
	_, ok := c.Source.(remoteSource)
	return ok
}

// remoteBase is what every remote source shares: files opened ahead of
// being asked for, and the version of every file opened.
type remoteBase struct {
	opt *RemoteOptions
	mu  sync.Mutex
	// ahead holds opens started before Open asked for them.
	ahead map[string]*pendingOpen
	// seen is the version of every file opened, by name.
	seen map[string]FileVersion
}

type pendingOpen struct {
	done chan struct{}
	f    File
	err  error
}

type aheadSource interface {
	rb() *remoteBase
	openNow(ctx context.Context, name string) (File, error)
}

// prefetch starts opening names in the background; Open takes them.
func prefetch(ctx context.Context, src remoteSource, names ...string) {
	as, ok := src.(aheadSource)
	if !ok {
		return
	}
	b := as.rb()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ahead == nil {
		b.ahead = map[string]*pendingOpen{}
	}
	for _, name := range names {
		if _, ok := b.ahead[name]; ok {
			continue
		}
		p := &pendingOpen{done: make(chan struct{})}
		b.ahead[name] = p
		go func() {
			defer close(p.done)
			p.f, p.err = as.openNow(ctx, name)
		}()
	}
}

// keep hands an open file to the next Open of name.
func keep(src remoteSource, name string, f File) {
	as, ok := src.(aheadSource)
	if !ok {
		return
	}
	b := as.rb()
	p := &pendingOpen{done: make(chan struct{}), f: f}
	close(p.done)
	b.mu.Lock()
	if b.ahead == nil {
		b.ahead = map[string]*pendingOpen{}
	}
	b.ahead[name] = p
	b.mu.Unlock()
}

// open returns a file opened ahead of time, else opens it now.
func (b *remoteBase) open(ctx context.Context, as aheadSource, name string) (File, error) {
	b.mu.Lock()
	p := b.ahead[name]
	delete(b.ahead, name)
	b.mu.Unlock()
	if p != nil {
		select {
		case <-p.done:
			return p.f, p.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return as.openNow(ctx, name)
}

func (b *remoteBase) record(v FileVersion) {
	b.mu.Lock()
	if b.seen == nil {
		b.seen = map[string]FileVersion{}
	}
	b.seen[v.Name] = v
	b.mu.Unlock()
}

// versions lists the files opened, by name.
func (b *remoteBase) versions() []FileVersion {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]FileVersion, 0, len(b.seen))
	for _, v := range b.seen {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b FileVersion) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// entriesAt lists, from names relative to a root, the files directly in
// it: what a directory listing would show.
func entriesAt(names []string) []Entry {
	var out []Entry
	for _, n := range names {
		if !strings.Contains(n, "/") {
			out = append(out, Entry{Name: n})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// splitTarget splits a remote path's part within its store into the
// directory and what it names there.
func splitTarget(p string) (dir string, tg target) {
	p = strings.Trim(p, "/")
	base := path.Base(p)
	if strings.HasSuffix(base, ".safetensors") || strings.HasSuffix(base, ".index.json") {
		dir = path.Dir(p)
		if dir == "." {
			dir = ""
		}
		return dir, targetOf(base)
	}
	return p, target{}
}

// A RemoteError is a request a remote store refused or could not answer.
// Its message names the file (never a signed URL) and the cause.
type RemoteError struct {
	// Path names the file as reports do.
	Path string
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Cause says what happened, in words.
	Cause string

	retryAfter time.Duration
	temporary  bool
	err        error
}

func (e *RemoteError) Error() string { return e.Path + ": " + e.Cause }

// Unwrap returns fs.ErrNotExist for a missing file, fs.ErrPermission for a
// refused one, ErrChanged for one replaced during the run.
func (e *RemoteError) Unwrap() error { return e.err }

// errIgnoresRange is a server that answered a ranged request with the
// whole file.
var errIgnoresRange = errors.New("the server ignores Range requests")

// notFound is a RemoteError for a missing file.
func notFound(p string, status int, cause string) *RemoteError {
	return &RemoteError{Path: p, Status: status, Cause: cause, err: fs.ErrNotExist}
}

// statusCause is an HTTP status in words, "HTTP 404 Not Found".
func statusCause(code int, text string) string {
	if text == "" {
		return fmt.Sprintf("HTTP %d", code)
	}
	return fmt.Sprintf("HTTP %d %s", code, text)
}

package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// A Part is a store's answer to a ranged request, its body unread.
type Part struct {
	Body io.ReadCloser
	// Whole is a 200 answer: the body is the object from byte 0, whatever
	// range was asked for.
	Whole bool
	// Off is the first byte a 206 answer's body holds.
	Off int64
	// Length is the body's length, -1 when the answer did not say.
	Length int64
	// Size is the object's size, -1 when unknown.
	Size int64
	// ETag is the answer's strong entity tag, "" for none.
	ETag string
}

// An Object is one file of a remote store, read by ranges.
type Object interface {
	// Get asks for bytes [off, off+n). A non-empty etag is the ETag the
	// object must still have (If-Match). A range starting past the end is
	// an *Unsatisfiable error; a failure worth retrying is an *Error with
	// Temporary set.
	Get(ctx context.Context, off, n int64, etag string) (*Part, error)
}

// Unsatisfiable is a 416 answer: the range starts past the end of the
// object, whose Size it gives (-1 when the answer did not say).
type Unsatisfiable struct{ Size int64 }

func (e *Unsatisfiable) Error() string { return "range not satisfiable" }

// A File is a checkpoint.File whose bytes come by ranged requests. The first
// bytes, read when it was opened, are kept.
type File struct {
	path string // as reports name it
	obj  Object
	opt  *checkpoint.RemoteOptions
	ctx  context.Context
	size int64
	etag string
	// etagCheck sends If-Match and compares each answer's ETag with the
	// first one. Off for the Hub, whose reads are pinned to a commit and
	// whose CDN may answer with another ETag for the same bytes.
	etagCheck bool
	prefix    []byte

	// pool gives read-ahead buffers, probes bounds the first request's
	// buffering: both the source's, shared by its files.
	pool   *chunkPool
	probes *byteBudget

	mu      sync.Mutex
	changed error
	cancel  context.CancelFunc
	ahead   readAhead
}

// OpenFile opens obj, a file of b's source named p in reports, with a
// first request for probe bytes (see Probe). pinETag sends If-Match with
// the first answer's ETag on every later read and compares the ETags
// answered: off where reads are pinned otherwise (the Hub's commit) and a
// CDN may answer another ETag for the same bytes. The file's read-ahead
// buffers and first-request buffering come from b's bounds, shared by the
// source's files.
func (b *Base) OpenFile(ctx context.Context, p string, obj Object, probe int64, opt *checkpoint.RemoteOptions, pinETag bool) (*File, error) {
	pool, probes := b.bounds()
	ctx, cancel := context.WithCancel(ctx)
	f := &File{path: p, obj: obj, opt: opt, ctx: ctx, cancel: cancel, etagCheck: pinETag, pool: pool, probes: probes}
	deadline := f.deadline()
	var err error
	for attempt := 0; ; attempt++ {
		err = f.first(probe, deadline)
		var u *Unsatisfiable
		switch {
		case err == nil:
			return f, nil
		case errors.As(err, &u) && u.Size > 0 && u.Size < probe && attempt == 0:
			// The server refuses a range past the end instead of
			// clipping it: ask for the whole (short) file.
			probe = u.Size
			continue
		case errors.As(err, &u):
			// Nothing at byte 0: an empty file (the header check reports
			// header_too_small).
			f.size, f.prefix = max(u.Size, 0), nil
			return f, nil
		}
		if !f.again(attempt, err, deadline) {
			cancel()
			return nil, err
		}
	}
}

// first makes the first request: the size, ETag and first probe bytes.
// What the body may hold is decided from the status and headers before
// any of it is read, and the bytes it needs are taken from the source's
// probe budget first.
func (f *File) first(probe int64, deadline time.Time) error {
	ctx, cancel := f.attemptContext(deadline)
	defer cancel()
	pt, err := f.obj.Get(ctx, 0, probe, "")
	if err != nil {
		return f.timedOut(ctx, err)
	}
	defer pt.Body.Close()
	f.etag = pt.ETag
	if pt.Whole {
		// A 200 whose length fits the range is a small file; one that is
		// longer is a server ignoring Range: stop before reading it. One
		// that does not say its length may be either: at most probe+1
		// bytes tell.
		if pt.Length > probe {
			return f.ignoresRange(pt.Length)
		}
		need := probe + 1
		if pt.Length >= 0 {
			need = pt.Length + 1
		}
		release, err := f.probes.acquire(ctx, need)
		if err != nil {
			return f.timedOut(ctx, err)
		}
		defer release()
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(pt.Body, probe+1))
		if n > probe {
			return f.ignoresRange(-1)
		}
		if err != nil || (pt.Length >= 0 && n != pt.Length) {
			return f.bodyError(ctx, err, n, pt.Length)
		}
		f.size, f.prefix = n, buf.Bytes()
		return nil
	}
	if pt.Off != 0 {
		return &Error{Path: f.path, Cause: fmt.Sprintf("asked for bytes from 0, the server sent bytes from %d", pt.Off)}
	}
	if pt.Size < 0 {
		return &Error{Path: f.path, Cause: "the server did not give the file's size (Content-Range without a length)"}
	}
	want := min(probe, pt.Size)
	if pt.Length >= 0 && pt.Length != want {
		return &Error{Path: f.path, Cause: fmt.Sprintf("asked for %s bytes, the server announced %s", textfmt.Thousands(want), textfmt.Thousands(pt.Length))}
	}
	release, err := f.probes.acquire(ctx, want)
	if err != nil {
		return f.timedOut(ctx, err)
	}
	defer release()
	buf := make([]byte, want) // at most probe
	n, err := io.ReadFull(pt.Body, buf)
	if err != nil {
		return f.bodyError(ctx, err, int64(n), want)
	}
	f.size, f.prefix = pt.Size, buf
	return nil
}

func (f *File) ignoresRange(length int64) error {
	what := "began sending the whole file"
	if length >= 0 {
		what = fmt.Sprintf("began sending the whole %s-byte file", textfmt.Thousands(length))
	}
	return &Error{Path: f.path, Status: 200, Err: errIgnoresRange,
		Cause: fmt.Sprintf("the server ignores Range requests: asked for the header, it %s; stopped (ckptcheck reads remote files by range)", what)}
}

// bodyError is a body that ended early or broke: retried.
func (f *File) bodyError(ctx context.Context, err error, got, want int64) error {
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	err = f.timedOut(ctx, err)
	var re *Error
	if errors.As(err, &re) {
		return err
	}
	return &Error{Path: f.path, Temporary: true, Err: err,
		Cause: fmt.Sprintf("the answer broke off after %s of %s bytes (%s)", textfmt.Thousands(got), textfmt.Thousands(want), NetCause(err))}
}

// timedOut turns an attempt's own deadline into an Error (retried while
// the request's time lasts); the run's cancellation stays what it is.
func (f *File) timedOut(ctx context.Context, err error) error {
	if f.ctx.Err() == nil && ctx.Err() == context.DeadlineExceeded {
		return &Error{Path: f.path, Temporary: true, Err: err,
			Cause: fmt.Sprintf("no complete answer within %s (--timeout, retries included)", Timeout(f.opt))}
	}
	return err
}

// deadline is when a request started now must end, its retries included:
// --timeout is the budget of the whole request.
func (f *File) deadline() time.Time { return time.Now().Add(Timeout(f.opt)) }

// minAttempt is the least time an attempt is given before the rest of the
// request's time is split.
const minAttempt = 500 * time.Millisecond

// attemptContext is the context of one attempt at a request that must end
// by deadline. An attempt may take half of the time left (all of it when
// little is left), so that one stalled connection leaves time for a retry.
func (f *File) attemptContext(deadline time.Time) (context.Context, context.CancelFunc) {
	left := time.Until(deadline)
	if left > 2*minAttempt {
		left /= 2
	}
	return context.WithTimeout(f.ctx, left)
}

// again waits before another attempt and says whether to make it: not
// when the wait would outlast the request's deadline.
func (f *File) again(attempt int, err error, deadline time.Time) bool {
	if attempt+1 >= maxAttempts || f.ctx.Err() != nil {
		return false
	}
	ok, after := retryable(err)
	if !ok || after > maxRetryAfter {
		return false
	}
	d := after
	if d <= 0 {
		d = backoff(attempt)
	}
	if d >= time.Until(deadline) {
		return false
	}
	return sleep(f.ctx, d) == nil
}

// backoff is the wait before retry attempt+1: 250 ms doubling, at most
// 8 s, with jitter so that many readers do not retry in step.
func backoff(attempt int) time.Duration {
	d := min(250*time.Millisecond<<attempt, 8*time.Second)
	return d/2 + rand.N(d/2+1)
}

// retryable says whether a failed request is worth repeating, and after
// how long the server asked for.
func retryable(err error) (bool, time.Duration) {
	var re *Error
	if errors.As(err, &re) {
		return re.Temporary, re.RetryAfter
	}
	if errors.Is(err, context.Canceled) {
		return false, 0
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.IsTemporary || de.IsTimeout, 0
	}
	// io.EOF is how a transport says the connection closed before an
	// answer (a server restarting, a load balancer dropping it).
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne), 0
}

// NetCause is a transport error in words, without URLs.
func NetCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed early"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return "cannot resolve host " + de.Name
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Op + ": " + oe.Err.Error()
	}
	return "network error"
}

// Size is the file's length when it was opened.
func (f *File) Size() int64 { return f.size }

// ETag is the store's entity tag for the bytes read, "" when it gave none
// or a weak one.
func (f *File) ETag() string { return f.etag }

// Version is the ETag of the bytes read, which names a remote file's
// contents as a modification time names a local one's (in the Hub, the
// commit the path is pinned to names them too).
func (f *File) Version() string {
	if f.etag == "" {
		return ""
	}
	return "etag " + f.etag
}

// Close stops the file's read-ahead and waits for its requests to end.
func (f *File) Close() error {
	f.cancel()
	f.closeAhead()
	return nil
}

// Unchanged reports a change one of the reads saw: the store's ETag or
// size moved (every read checks them).
func (f *File) Unchanged() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// ReadAt reads len(p) bytes at off: from the bytes kept at open, else by
// one ranged request (retried on failure, resumed where a broken answer
// stopped).
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.readAt(p, off, true) }

// ReadAtDirect is ReadAt for a format's scattered small reads, such as the
// local headers of a zip archive's entries read at open: each is one
// ranged request for just its bytes and never switches the file to
// read-ahead, which would fetch the whole chunks (the storages) between
// them.
func (f *File) ReadAtDirect(p []byte, off int64) (int, error) { return f.readAt(p, off, false) }

func (f *File) readAt(p []byte, off int64, ahead bool) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", f.path, off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), f.size-off))
	done := 0
	if off < int64(len(f.prefix)) {
		done = copy(p[:n], f.prefix[off:])
	}
	if done < n {
		ok, err := false, error(nil)
		if ahead {
			ok, err = f.readAheadAt(p[done:n], off+int64(done))
		}
		if !ok {
			err = f.fetch(p[done:n], off+int64(done))
		}
		if err != nil {
			return done, &ReadError{Path: f.path, Off: off, Len: len(p), Err: err}
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fetch fills p from byte off: one request, retried and resumed within
// its deadline.
func (f *File) fetch(p []byte, off int64) error {
	attempt := 0
	deadline := f.deadline()
	for len(p) > 0 {
		n, err := f.fetchOnce(p, off, deadline)
		p, off = p[n:], off+int64(n)
		if err == nil {
			continue
		}
		if n > 0 {
			attempt = 0 // progress: a fresh set of attempts for the rest
		}
		if !f.again(attempt, err, deadline) {
			if errors.Is(err, checkpoint.ErrChanged) {
				f.mu.Lock()
				f.changed = err
				f.mu.Unlock()
			}
			return err
		}
		attempt++
	}
	return nil
}

// fetchOnce makes one request for p at off and returns the bytes it
// delivered.
func (f *File) fetchOnce(p []byte, off int64, deadline time.Time) (int, error) {
	ctx, cancel := f.attemptContext(deadline)
	defer cancel()
	etag := ""
	if f.etagCheck {
		etag = f.etag
	}
	pt, err := f.obj.Get(ctx, off, int64(len(p)), etag)
	if err != nil {
		var u *Unsatisfiable
		if errors.As(err, &u) {
			return 0, f.changedError(fmt.Sprintf("the file is now shorter than byte %s", textfmt.Thousands(off)))
		}
		return 0, f.timedOut(ctx, err)
	}
	defer pt.Body.Close()
	switch {
	case f.etagCheck && pt.ETag != "" && f.etag != "" && pt.ETag != f.etag:
		return 0, f.changedError(fmt.Sprintf("its ETag went from %s to %s", f.etag, pt.ETag))
	case pt.Size >= 0 && pt.Size != f.size:
		return 0, f.changedError(fmt.Sprintf("its size went from %s to %s bytes", textfmt.Thousands(f.size), textfmt.Thousands(pt.Size)))
	case pt.Whole && !(off == 0 && pt.Length >= 0 && pt.Length == f.size && f.size <= int64(len(p))):
		return 0, f.ignoresRange(pt.Length)
	case !pt.Whole && pt.Off != off:
		return 0, &Error{Path: f.path, Cause: fmt.Sprintf("asked for bytes from %s, the server sent bytes from %s", textfmt.Thousands(off), textfmt.Thousands(pt.Off))}
	case !pt.Whole && pt.Length >= 0 && pt.Length != int64(len(p)):
		return 0, &Error{Path: f.path, Cause: fmt.Sprintf("asked for %s bytes from %s, the server announced %s", textfmt.Thousands(int64(len(p))), textfmt.Thousands(off), textfmt.Thousands(pt.Length))}
	}
	n, err := io.ReadFull(pt.Body, p)
	if err != nil {
		return n, f.bodyError(ctx, err, int64(n), int64(len(p)))
	}
	return n, nil
}

func (f *File) changedError(what string) error {
	return &Error{Path: f.path, Err: checkpoint.ErrChanged, Cause: fmt.Sprintf("%s: the file was replaced during the run (%s)", checkpoint.ErrChanged, what)}
}

// A ReadError is a read of a remote file that failed: it names the file
// and the read's absolute offset in it, and wraps the cause (an *Error,
// checkpoint.ErrChanged for a file replaced during the run, or the run's
// cancellation).
type ReadError struct {
	Path string
	Off  int64
	Len  int
	Err  error
}

func (e *ReadError) Error() string {
	cause := e.Err.Error()
	var re *Error
	if errors.As(e.Err, &re) && re.Path == e.Path {
		cause = re.Cause
	}
	return fmt.Sprintf("%s: reading %s bytes at byte %s: %s", e.Path, textfmt.Thousands(int64(e.Len)), textfmt.Thousands(e.Off), cause)
}

// Unwrap returns Err.
func (e *ReadError) Unwrap() error { return e.Err }

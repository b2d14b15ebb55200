package checkpoint

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

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// A part is a store's answer to a ranged request, its body unread.
type part struct {
	body io.ReadCloser
	// whole is a 200 answer: the body is the object from byte 0, whatever
	// range was asked for.
	whole bool
	// off is the first byte a 206 answer's body holds.
	off int64
	// length is the body's length, -1 when the answer did not say.
	length int64
	// size is the object's size, -1 when unknown.
	size int64
	etag string
}

// An object is one file of a remote store, read by ranges.
type object interface {
	// get asks for bytes [off, off+n). A non-empty etag is the ETag the
	// object must still have (If-Match). A range starting past the end is
	// an *unsatisfiable error.
	get(ctx context.Context, off, n int64, etag string) (*part, error)
}

// unsatisfiable is a 416 answer: the range starts past the end of the
// object, whose size it gives (-1 when the answer did not say).
type unsatisfiable struct{ size int64 }

func (e *unsatisfiable) Error() string { return "range not satisfiable" }

// A remoteFile is a File whose bytes come by ranged requests. The first
// bytes, read when it was opened, are kept.
type remoteFile struct {
	path string // as reports name it
	obj  object
	opt  *RemoteOptions
	ctx  context.Context
	size int64
	etag string
	// etagCheck sends If-Match and compares each answer's ETag with the
	// first one. Off for the Hub, whose reads are pinned to a commit and
	// whose CDN may answer with another ETag for the same bytes.
	etagCheck bool
	prefix    []byte

	mu      sync.Mutex
	changed error
	cancel  context.CancelFunc
	ahead   readAhead
}

// openRemoteFile opens obj with a first request for probe bytes.
func openRemoteFile(ctx context.Context, p string, obj object, probe int64, opt *RemoteOptions, etagCheck bool) (*remoteFile, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &remoteFile{path: p, obj: obj, opt: opt, ctx: ctx, cancel: cancel, etagCheck: etagCheck}
	var err error
	for attempt := 0; ; attempt++ {
		err = f.first(probe)
		var u *unsatisfiable
		switch {
		case err == nil:
			return f, nil
		case errors.As(err, &u) && u.size > 0 && u.size < probe && attempt == 0:
			// The server refuses a range past the end instead of
			// clipping it: ask for the whole (short) file.
			probe = u.size
			continue
		case errors.As(err, &u):
			// Nothing at byte 0: an empty file (the header check reports
			// header_too_small).
			f.size, f.prefix = max(u.size, 0), nil
			return f, nil
		}
		if !f.again(attempt, err) {
			cancel()
			return nil, err
		}
	}
}

// first makes the first request: the size, ETag and first probe bytes.
func (f *remoteFile) first(probe int64) error {
	ctx, cancel := context.WithTimeout(f.ctx, f.opt.timeout())
	defer cancel()
	pt, err := f.obj.get(ctx, 0, probe, "")
	if err != nil {
		return f.timedOut(ctx, err)
	}
	defer pt.body.Close()
	f.etag = pt.etag
	if pt.whole {
		// A 200 whose length fits the range is a small file; one that is
		// longer is a server ignoring Range: stop before reading it.
		if pt.length > probe {
			return f.ignoresRange(pt.length)
		}
		var buf bytes.Buffer
		n, err := buf.ReadFrom(io.LimitReader(pt.body, probe+1))
		if n > probe {
			return f.ignoresRange(-1)
		}
		if err != nil || (pt.length >= 0 && n != pt.length) {
			return f.bodyError(ctx, err, n, pt.length)
		}
		f.size, f.prefix = n, buf.Bytes()
		return nil
	}
	if pt.off != 0 {
		return &RemoteError{Path: f.path, Cause: fmt.Sprintf("asked for bytes from 0, the server sent bytes from %d", pt.off)}
	}
	if pt.size < 0 {
		return &RemoteError{Path: f.path, Cause: "the server did not give the file's size (Content-Range without a length)"}
	}
	want := min(probe, pt.size)
	if pt.length >= 0 && pt.length != want {
		return &RemoteError{Path: f.path, Cause: fmt.Sprintf("asked for %s bytes, the server announced %s", textfmt.Thousands(want), textfmt.Thousands(pt.length))}
	}
	buf := make([]byte, want) // at most probe
	n, err := io.ReadFull(pt.body, buf)
	if err != nil {
		return f.bodyError(ctx, err, int64(n), want)
	}
	f.size, f.prefix = pt.size, buf
	return nil
}

func (f *remoteFile) ignoresRange(length int64) error {
	what := "began sending the whole file"
	if length >= 0 {
		what = fmt.Sprintf("began sending the whole %s-byte file", textfmt.Thousands(length))
	}
	return &RemoteError{Path: f.path, Status: 200, err: errIgnoresRange,
		Cause: fmt.Sprintf("the server ignores Range requests: asked for the header, it %s; stopped (ckptcheck reads remote files by range)", what)}
}

// bodyError is a body that ended early or broke: retried.
func (f *remoteFile) bodyError(ctx context.Context, err error, got, want int64) error {
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	err = f.timedOut(ctx, err)
	var re *RemoteError
	if errors.As(err, &re) {
		return err
	}
	return &RemoteError{Path: f.path, temporary: true, err: err,
		Cause: fmt.Sprintf("the answer broke off after %s of %s bytes (%s)", textfmt.Thousands(got), textfmt.Thousands(want), netCause(err))}
}

// timedOut turns a request's own deadline into a RemoteError (retried);
// the run's cancellation stays what it is.
func (f *remoteFile) timedOut(ctx context.Context, err error) error {
	if f.ctx.Err() == nil && ctx.Err() == context.DeadlineExceeded {
		return &RemoteError{Path: f.path, temporary: true, err: err,
			Cause: fmt.Sprintf("no complete answer within %s (--timeout)", f.opt.timeout())}
	}
	return err
}

// again waits before another attempt and says whether to make it.
func (f *remoteFile) again(attempt int, err error) bool {
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
	return f.opt.wait(f.ctx, d) == nil
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
	var re *RemoteError
	if errors.As(err, &re) {
		return re.temporary, re.retryAfter
	}
	if errors.Is(err, context.Canceled) {
		return false, 0
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de.IsTemporary || de.IsTimeout, 0
	}
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne), 0
}

// netCause is a transport error in words, without URLs.
func netCause(err error) string {
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

func (f *remoteFile) Size() int64 { return f.size }

// Version is the ETag of the bytes read, which names a remote file's
// contents as a modification time names a local one's (in the Hub, the
// commit the path is pinned to names them too).
func (f *remoteFile) Version() string {
	if f.etag == "" {
		return ""
	}
	return "etag " + f.etag
}

// Close stops the file's read-ahead.
func (f *remoteFile) Close() error {
	f.cancel()
	f.closeAhead()
	return nil
}

// Unchanged reports a change one of the reads saw: the store's ETag or
// size moved (every read checks them).
func (f *remoteFile) Unchanged() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// ReadAt reads len(p) bytes at off: from the bytes kept at open, else by
// one ranged request (retried on failure, resumed where a broken answer
// stopped).
func (f *remoteFile) ReadAt(p []byte, off int64) (int, error) {
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
		ok, err := f.readAheadAt(p[done:n], off+int64(done))
		if !ok {
			err = f.fetch(p[done:n], off+int64(done))
		}
		if err != nil {
			return done, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fetch fills p from byte off.
func (f *remoteFile) fetch(p []byte, off int64) error {
	attempt := 0
	for len(p) > 0 {
		n, err := f.fetchOnce(p, off)
		p, off = p[n:], off+int64(n)
		if err == nil {
			continue
		}
		if n > 0 {
			attempt = 0 // progress: a fresh set of attempts for the rest
		}
		if !f.again(attempt, err) {
			if errors.Is(err, ErrChanged) {
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
func (f *remoteFile) fetchOnce(p []byte, off int64) (int, error) {
	ctx, cancel := context.WithTimeout(f.ctx, f.opt.timeout())
	defer cancel()
	etag := ""
	if f.etagCheck {
		etag = f.etag
	}
	pt, err := f.obj.get(ctx, off, int64(len(p)), etag)
	if err != nil {
		var u *unsatisfiable
		if errors.As(err, &u) {
			return 0, f.changedError(fmt.Sprintf("the file is now shorter than byte %s", textfmt.Thousands(off)))
		}
		return 0, f.timedOut(ctx, err)
	}
	defer pt.body.Close()
	switch {
	case f.etagCheck && pt.etag != "" && f.etag != "" && pt.etag != f.etag:
		return 0, f.changedError(fmt.Sprintf("its ETag went from %s to %s", f.etag, pt.etag))
	case pt.size >= 0 && pt.size != f.size:
		return 0, f.changedError(fmt.Sprintf("its size went from %s to %s bytes", textfmt.Thousands(f.size), textfmt.Thousands(pt.size)))
	case pt.whole && !(off == 0 && pt.length >= 0 && pt.length == f.size && f.size <= int64(len(p))):
		return 0, f.ignoresRange(pt.length)
	case !pt.whole && pt.off != off:
		return 0, &RemoteError{Path: f.path, Cause: fmt.Sprintf("asked for bytes from %s, the server sent bytes from %s", textfmt.Thousands(off), textfmt.Thousands(pt.off))}
	}
	n, err := io.ReadFull(pt.body, p)
	if err != nil {
		return n, f.bodyError(ctx, err, int64(n), int64(len(p)))
	}
	return n, nil
}

func (f *remoteFile) changedError(what string) error {
	return &RemoteError{Path: f.path, err: ErrChanged, Cause: fmt.Sprintf("%s: the file was replaced during the run (%s)", ErrChanged, what)}
}

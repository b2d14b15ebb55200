// Package remotetest serves checkpoints on loopback for tests and
// benchmarks of remote sources: a file server with range support and
// knobs (latency, no range support, faults, redirects) and a fake Hugging
// Face Hub; the S3 fake built on its Server is tools/s3fake, in the tools
// module (for gofakes3). Every server counts the bytes it sends and
// records the requests it gets.
// Nothing here listens anywhere but 127.0.0.0/8.
package remotetest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Request is what a server recorded of one request.
type Request struct {
	Method, Path, Range, IfMatch string
	// Authorization is the header as received ("" when absent).
	Authorization string
	Host          string
}

// A Server serves the files of a directory over HTTP on loopback, with
// single-range requests, strong ETags and If-Match. Its fields may be
// changed while it runs (they are read under its lock).
type Server struct {
	*httptest.Server
	Dir string

	mu sync.Mutex
	// Latency is added before every answer, redirects included.
	latency time.Duration
	// noRange ignores Range headers: every answer is 200 with the file.
	noRange bool
	// intercept, if set, may answer a request itself (returning true).
	intercept func(w http.ResponseWriter, r *http.Request) bool
	// handler answers what intercept leaves; nil serves the files of Dir.
	handler http.Handler
	log     []Request

	bytes    atomic.Int64
	requests atomic.Int64
	inFlight atomic.Int64
	conns    atomic.Int64
}

// NewServer serves dir on 127.0.0.1 (or on host, such as "127.0.0.2",
// when given).
func NewServer(dir string, host ...string) (*Server, error) {
	s := &Server{Dir: dir}
	addr := "127.0.0.1:0"
	if len(host) > 0 {
		addr = net.JoinHostPort(host[0], "0")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: s, ConnState: s.connState}}
	s.Start()
	return s, nil
}

// connState counts the connections open.
func (s *Server) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Add(-1)
	}
}

// Conns is how many client connections are open, idle ones included.
func (s *Server) Conns() int64 { return s.conns.Load() }

// SetLatency sets the delay added before every answer.
func (s *Server) SetLatency(d time.Duration) { s.mu.Lock(); s.latency = d; s.mu.Unlock() }

// SetNoRange makes the server ignore Range headers, as some do.
func (s *Server) SetNoRange(v bool) { s.mu.Lock(); s.noRange = v; s.mu.Unlock() }

// Intercept installs a function that may answer a request itself.
func (s *Server) Intercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	s.intercept = f
	s.mu.Unlock()
}

// SetHandler makes h answer requests instead of the file server.
func (s *Server) SetHandler(h http.Handler) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

// Bytes is how many body bytes the server has sent, once the answers
// under way have finished (a client may have all of an answer's bytes
// before the handler returns and counts them).
func (s *Server) Bytes() int64 {
	s.waitIdle()
	return s.bytes.Load()
}

// waitIdle waits, up to 10 s, for the answers under way to finish, so that
// what they send is counted before a count is read or reset.
func (s *Server) waitIdle() {
	for i := 0; i < 5000 && s.inFlight.Load() > 0; i++ {
		time.Sleep(2 * time.Millisecond)
	}
}

// BytesNow is how many body bytes the server has counted so far, without
// waiting for the answers under way.
func (s *Server) BytesNow() int64 { return s.bytes.Load() }

// Requests is how many requests the server has answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Reset zeroes the counters and the log, once the answers under way (a
// probe the client stopped reading) have finished.
func (s *Server) Reset() {
	s.waitIdle()
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
	s.bytes.Store(0)
	s.requests.Store(0)
}

// Log returns the requests recorded so far.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.requests.Add(1)
	s.mu.Lock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Range: r.Header.Get("Range"), IfMatch: r.Header.Get("If-Match"),
		Authorization: r.Header.Get("Authorization"), Host: r.Host})
	latency, noRange, intercept, handler := s.latency, s.noRange, s.intercept, s.handler
	s.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	cw := &countingWriter{ResponseWriter: w, n: &s.bytes}
	if intercept != nil && intercept(cw, r) {
		return
	}
	if noRange {
		r.Header.Del("Range")
	}
	if handler != nil {
		handler.ServeHTTP(cw, r)
		return
	}
	ServeFile(cw, r, s.Dir, r.URL.Path)
}

// ServeFile answers r with the file at urlPath under dir: ranges, a strong
// ETag (from the file's size and modification time, so a sparse file is
// never read to compute it) and If-Match through http.ServeContent, which
// copies the file to the connection without holding it.
func ServeFile(w http.ResponseWriter, r *http.Request, dir, urlPath string) {
	name := path.Clean("/" + urlPath)
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", ETag(st))
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// ETag is a strong entity tag for a file's size and modification time.
func ETag(st os.FileInfo) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d %d", st.Size(), st.ModTime().UnixNano()))
	return `"` + hex.EncodeToString(h[:16]) + `"`
}

// countingWriter counts body bytes, keeping the sendfile path (ReadFrom).
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := c.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
	c.n.Add(n)
	return n, err
}

// Hijack lets an intercept drop the connection mid-body.
func (c *countingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return c.ResponseWriter.(http.Hijacker).Hijack()
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// DropMidBody answers a ranged GET with the right headers and half the
// body, then closes the connection: a connection dropped mid-transfer.
func DropMidBody(w http.ResponseWriter, r *http.Request, dir string) {
	rec := httptest.NewRecorder()
	ServeFile(rec, r, dir, r.URL.Path)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	body := rec.Body.Bytes()
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(rec.Code)
	w.Write(body[:len(body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler) // the server closes the connection
}

// Redirect answers with a 302 to the same path on another server.
func Redirect(w http.ResponseWriter, r *http.Request, to string) {
	u := strings.TrimRight(to, "/") + r.URL.Path
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, u, http.StatusFound)
}

// Trickle answers a ranged GET with the headers of the range asked for
// (206, Content-Range, Content-Length) of a file of size bytes, then sends
// one byte every interval until the client goes away: a server too slow
// for any timeout.
func Trickle(w http.ResponseWriter, r *http.Request, size int64, interval time.Duration) {
	var first, last int64
	if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &first, &last); err != nil || last >= size {
		first, last = 0, size-1
	}
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, size))
	w.Header().Set("Content-Length", fmt.Sprint(last-first+1))
	w.WriteHeader(http.StatusPartialContent)
	t := time.NewTicker(interval)
	defer t.Stop()
	for range last - first + 1 {
		if _, err := w.Write([]byte{0}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
}

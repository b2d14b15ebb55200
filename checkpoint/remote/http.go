package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// newHTTPClient is a client for one remote source. When auth is set (an
// Authorization value), it goes with requests to origin only: the exact
// scheme, host and port. Go's client would forward an Authorization header
// set on the first request along a redirect to the same host on another
// port (net/http's shouldCopyHeaderOnRedirect compares host names only), so
// the header is never set on a request: the transport adds it to each hop
// whose origin matches. base carries the requests; nil is a transport of
// the source's own.
func newHTTPClient(origin, auth string, base http.RoundTripper) *http.Client {
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64 // many ranged reads in flight, connections reused
		tr.DisableCompression = true
		base = tr
	}
	rt := base
	if auth != "" {
		rt = &authTransport{base: base, origin: origin, auth: auth}
	}
	return &http.Client{Transport: rt, CheckRedirect: checkRedirect}
}

// checkRedirect follows at most 10 redirects and never from https to
// http: the next hop would see a signed URL in the clear.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("more than 10 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("refused a redirect from https to plain http")
	}
	req.Header.Del("Authorization")
	return nil
}

// authTransport adds an Authorization header to requests for one origin.
type authTransport struct {
	base   http.RoundTripper
	origin string
	auth   string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if originOf(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", t.auth)
	return t.base.RoundTrip(r)
}

// originOf is scheme://host:port, with the scheme's default port written
// out, so that two spellings of one origin compare equal.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// displayURL is a URL as reports show it: without credentials, query or
// fragment (a presigned URL's signature is a credential).
func displayURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// An httpObject is a file at a URL. After a redirect the final URL (a
// CDN's signed URL, for the Hub) is reused for later reads, and dropped
// again when it stops working.
type httpObject struct {
	client  *http.Client
	url     string
	display string
	// refused explains a 401/403 in words ("" for the plain status).
	refused func(status int, h http.Header) string
	final   atomic.Pointer[string]
}

func (o *httpObject) Get(ctx context.Context, off, n int64, etag string) (*Part, error) {
	if u := o.final.Load(); u != nil {
		pt, err := o.request(ctx, *u, off, n, etag)
		var re *Error
		if !errors.As(err, &re) || re.Status == 0 || re.Status == http.StatusPreconditionFailed || re.Status >= 500 || re.Status == http.StatusTooManyRequests {
			return pt, err
		}
		// A 4xx from the redirect target: a signed URL that expired.
		// Ask the origin again.
		o.final.CompareAndSwap(u, nil)
	}
	return o.request(ctx, o.url, off, n, etag)
}

func (o *httpObject) request(ctx context.Context, u string, off, n int64, etag string) (*Part, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &Error{Path: o.display, Cause: "not a valid URL"}
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	req.Header.Set("User-Agent", "ckptcheck")
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		// The error names the URL, which may be signed: say only why.
		inner := err
		var ue *url.Error
		if errors.As(err, &ue) {
			inner = ue.Err
		}
		temp, _ := retryable(inner)
		cause := NetCause(inner)
		if !temp && ctx.Err() == nil {
			cause = inner.Error()
		}
		return nil, &Error{Path: o.display, Cause: cause, Temporary: temp, Err: inner}
	}
	if final := resp.Request.URL.String(); final != u {
		o.final.Store(&final)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return &Part{Body: resp.Body, Whole: true, Length: resp.ContentLength, Size: resp.ContentLength, ETag: strongETag(resp.Header)}, nil
	case http.StatusPartialContent:
		start, _, size, ok := ParseContentRange(resp.Header.Get("Content-Range"))
		if !ok {
			discard(resp.Body)
			return nil, &Error{Path: o.display, Status: resp.StatusCode, Cause: fmt.Sprintf("HTTP 206 with a Content-Range of %q", resp.Header.Get("Content-Range"))}
		}
		return &Part{Body: resp.Body, Off: start, Length: resp.ContentLength, Size: size, ETag: strongETag(resp.Header)}, nil
	}
	discard(resp.Body)
	return nil, o.statusError(resp)
}

// maxDiscard is how much of an answer not used (a 404's page) is read
// before closing it: a body closed unread closes its connection, so every
// companion file probed for and missing would cost a new connection (and a
// TLS handshake) instead of reusing one.
const maxDiscard = 64 << 10

// discard reads up to maxDiscard bytes of body and closes it.
func discard(body io.ReadCloser) {
	io.CopyN(io.Discard, body, maxDiscard)
	body.Close()
}

// statusError is a status other than 200 and 206 as an error.
func (o *httpObject) statusError(resp *http.Response) error {
	code := resp.StatusCode
	cause := statusCause(code, http.StatusText(code))
	switch {
	case code == http.StatusRequestedRangeNotSatisfiable:
		size := int64(-1)
		if s, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes */"); ok {
			if v, err := strconv.ParseInt(s, 10, 64); err == nil && v >= 0 {
				size = v
			}
		}
		return &Unsatisfiable{Size: size}
	case code == http.StatusNotFound || code == http.StatusGone:
		return NotFound(o.display, code, "not found ("+cause+")")
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if o.refused != nil {
			if why := o.refused(code, resp.Header); why != "" {
				cause += ": " + why
			}
		}
		return &Error{Path: o.display, Status: code, Cause: "access refused (" + cause + ")", Err: fs.ErrPermission}
	case code == http.StatusPreconditionFailed:
		return &Error{Path: o.display, Status: code, Err: checkpoint.ErrChanged,
			Cause: fmt.Sprintf("%s: the file was replaced during the run (its ETag no longer matches: %s)", checkpoint.ErrChanged, cause)}
	case code == http.StatusTooManyRequests || code >= 500:
		after := RetryAfter(resp.Header.Get("Retry-After"))
		if after > maxRetryAfter {
			cause += fmt.Sprintf(", asking to retry after %s", after.Round(time.Second))
		}
		return &Error{Path: o.display, Status: code, Cause: cause, Temporary: true, RetryAfter: after}
	}
	return &Error{Path: o.display, Status: code, Cause: cause}
}

// RetryAfter reads a Retry-After header: seconds or an HTTP date.
func RetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// strongETag is the response's ETag when it is a strong one: If-Match and
// comparisons need strong validators.
func strongETag(h http.Header) string {
	e := h.Get("ETag")
	if strings.HasPrefix(e, "W/") {
		return ""
	}
	return e
}

// ParseContentRange reads "bytes first-last/size"; size is -1 for "*".
func ParseContentRange(v string) (first, last, size int64, ok bool) {
	s, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, false
	}
	rng, total, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, 0, false
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, false
	}
	var err1, err2 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, 0, false
	}
	size = -1
	if total != "*" {
		v, err := strconv.ParseInt(total, 10, 64)
		if err != nil || v <= last {
			return 0, 0, 0, false
		}
		size = v
	}
	return first, last, size, true
}

// An httpSource reads files at URLs relative to a base URL. Plain HTTP
// cannot list: List returns checkpoint.ErrNotListable.
type httpSource struct {
	Base
	opt     *checkpoint.RemoteOptions
	client  *http.Client
	base    *url.URL // the directory, ending in "/", without query
	first   string   // the name of the file the user gave
	firstU  string   // its URL as given, query included
	display string   // base as reports show it
}

// openHTTP is the Opener of http(s) URLs. The URL names a .safetensors
// file, an index, or a directory (then the index or model.safetensors
// there, found by asking). A URL on the Hub's endpoint is read as the
// hf:// path it is.
func openHTTP(ctx context.Context, raw string, o checkpoint.Options) (*checkpoint.Location, error) {
	opt := &o.Remote
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: not a valid URL", raw)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if ref, ok := hubURL(u, opt); ok {
		if opt.Offline {
			return nil, fmt.Errorf("%s: offline (HF_HUB_OFFLINE): give the repository as hf://%s to read it from the hub cache", displayURL(u), ref.repo)
		}
		return openHF(ctx, ref, opt)
	}
	s := &httpSource{opt: opt, client: newHTTPClient("", "", opt.Transport)}
	s.OpenNow = s.openNow
	dir, tg := u, target{}
	if base := u.Path[strings.LastIndex(u.Path, "/")+1:]; targetOf(base) != (target{}) {
		tg = targetOf(base)
		s.first, s.firstU = base, u.String()
		d := *u
		d.Path = u.Path[:len(u.Path)-len(base)]
		d.RawPath = ""
		dir = &d
	} else if !strings.HasSuffix(dir.Path, "/") {
		d := *u
		d.Path += "/"
		d.RawPath = ""
		dir = &d
	}
	b := *dir
	b.User, b.RawQuery, b.ForceQuery, b.Fragment, b.RawFragment = nil, "", false, "", ""
	if u.User != nil {
		return nil, fmt.Errorf("%s: credentials in the URL are not sent; use a presigned URL or hf:// / s3://", displayURL(u))
	}
	s.base, s.display = &b, b.String()
	if tg == (target{}) {
		// No listing: look for the usual names, in transformers' order
		// (safetensors first, then torch.save's pytorch_model.bin).
		for _, name := range []string{"model.safetensors.index.json", "model.safetensors", "pytorch_model.bin.index.json", "pytorch_model.bin"} {
			f, err := s.openNow(ctx, name)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			s.keep(name, f)
			return Locate(ctx, s, name)
		}
		return nil, fmt.Errorf("%s: no model.safetensors.index.json or model.safetensors there, nor pytorch_model.bin.index.json or pytorch_model.bin (over http(s), give the URL of a tensor file or of an index: there is no listing)", s.display)
	}
	return Locate(ctx, s, tg.name())
}

// Path is the file's URL without query.
func (s *httpSource) Path(name string) string {
	if name == "." {
		return s.display
	}
	return s.display + name
}

func (s *httpSource) List(ctx context.Context) ([]checkpoint.Entry, error) {
	return nil, checkpoint.ErrNotListable
}

func (s *httpSource) openNow(ctx context.Context, name string) (checkpoint.File, error) {
	u := s.firstU
	if name != s.first {
		ref, err := url.Parse(escapePath(name))
		if err != nil {
			return nil, &Error{Path: s.Path(name), Cause: "not a valid file name for a URL"}
		}
		u = s.base.ResolveReference(ref).String()
	}
	obj := &httpObject{client: s.client, url: u, display: s.Path(name)}
	f, err := s.OpenFile(ctx, s.Path(name), obj, Probe(name), s.opt, true)
	if err != nil {
		return nil, err
	}
	s.Record(checkpoint.FileVersion{Name: name, Size: f.size, ETag: f.etag})
	return f, nil
}

// Close closes the files opened ahead that nobody took and, when the
// source has a transport of its own, its idle connections.
func (s *httpSource) Close() error { return closeSource(&s.Base, s.client, s.opt) }

// closeSource closes b and the idle connections of client when its
// transport is the source's own (not RemoteOptions.Transport).
func closeSource(b *Base, client *http.Client, opt *checkpoint.RemoteOptions) error {
	err := b.Close()
	if opt.Transport == nil {
		client.CloseIdleConnections()
	}
	return err
}

// Remote names the base URL, and the files read.
func (s *httpSource) Remote() *checkpoint.Remote {
	kind := strings.TrimSuffix(s.base.Scheme, "://")
	return &checkpoint.Remote{Kind: kind, Name: s.display, Files: s.Versions()}
}

// escapePath escapes each segment of a slash-separated name for a URL.
func escapePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// readCapped reads a small answer body (API JSON), refusing one over limit.
func readCapped(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %s", what, NetCause(err))
	}
	if int64(len(b)) > limit {
		return nil, &overLimitError{what, limit}
	}
	return b, nil
}

// An overLimitError is an answer larger than its limit: asking again
// gets the same answer, so it is not worth a retry.
type overLimitError struct {
	what  string
	limit int64
}

func (e *overLimitError) Error() string {
	return fmt.Sprintf("%s is over %s bytes", e.what, textfmt.Thousands(e.limit))
}

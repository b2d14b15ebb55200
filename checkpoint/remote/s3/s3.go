package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/checkpoint/remote"
)

// Linking this package makes checkpoint.Open read s3:// paths.
func init() { checkpoint.RegisterScheme("s3", openS3) }

// maxListed bounds a prefix's listing.
const maxListed = 1_000_000

// maxListPages bounds the requests of a listing: S3 answers up to 1,000
// keys a page, so 2,000 pages hold twice maxListed. A server that keeps
// inventing continuation tokens is stopped there.
const maxListPages = 2_000

// An s3Source reads the objects under one prefix of a bucket.
type s3Source struct {
	remote.Base
	opt     *checkpoint.RemoteOptions
	client  *s3.Client
	bucket  string
	prefix  string // "" or ending in "/"
	display string // s3://bucket/prefix/

	listOnce sync.Once
	listed   []checkpoint.Entry
	listErr  error
}

// openS3 is the Opener of s3:// paths.
func openS3(ctx context.Context, p string, o checkpoint.Options) (*checkpoint.Location, error) {
	opt := &o.Remote
	_, rest, _ := strings.Cut(p, "://")
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, fmt.Errorf("%s: an s3:// path is s3://bucket/prefix", p)
	}
	dir, name := remote.SplitTarget(key)
	s := &s3Source{opt: opt, bucket: bucket}
	s.OpenNow = s.openNow
	if dir != "" {
		s.prefix = dir + "/"
	}
	s.display = "s3://" + bucket + "/" + s.prefix
	client, err := newS3Client(ctx, bucket, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	s.client = client
	return remote.Locate(ctx, s, name)
}

// newS3Client reads the AWS configuration (awsconfig.go). With no region
// configured (and no endpoint of its own), the bucket's region is asked for.
func newS3Client(ctx context.Context, bucket string, opt *checkpoint.RemoteOptions) (*s3.Client, error) {
	c, err := loadAWSConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	tr.DisableCompression = true
	if f := c.caBundle(); f != "" {
		pem, err := readSmallFile(f)
		if err != nil {
			return nil, fmt.Errorf("AWS CA bundle: %v", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("AWS CA bundle %s: no PEM certificate", f)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	hc := &http.Client{Transport: tr, CheckRedirect: noRedirects}
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if !opt.NoSignRequest {
		if creds, err = credentialChain(c, hc); err != nil {
			return nil, err
		}
	}
	o := s3.Options{
		Region:      c.region(),
		Credentials: creds,
		HTTPClient:  hc,
		// Retries are ckptcheck's own (the same for every source); the
		// SDK's would multiply them.
		Retryer:                    aws.NopRetryer{},
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if e := c.endpoint(); e != "" {
		o.BaseEndpoint, o.UsePathStyle = aws.String(e), true
	}
	if o.Region == "" {
		o.Region = "us-east-1"
		if o.BaseEndpoint == nil {
			if r := bucketRegion(ctx, s3.New(o), bucket, opt); r != "" {
				o.Region = r
			}
		}
	}
	return s3.New(o), nil
}

// noRedirects follows no redirect: the 3xx answer is S3's, an error (see
// redirectError). The SDK's own client follows 307 and 308, and net/http
// copies Authorization along a redirect to the same host on another port:
// a signed request would reach a server it was not signed for, and that
// server's bytes would be read as the object's.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// bucketRegion asks S3 where a bucket is: HeadBucket answers with
// x-amz-bucket-region, also when it refuses the request.
func bucketRegion(ctx context.Context, c *s3.Client, bucket string, opt *checkpoint.RemoteOptions) string {
	ctx, cancel := context.WithTimeout(ctx, remote.Timeout(opt))
	defer cancel()
	out, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return aws.ToString(out.BucketRegion)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get("X-Amz-Bucket-Region")
	}
	return ""
}

func (s *s3Source) Path(name string) string {
	if name == "." {
		return s.display
	}
	return s.display + name
}

// List lists the objects directly under the prefix (ListObjectsV2 with a
// "/" delimiter), once.
func (s *s3Source) List(ctx context.Context) ([]checkpoint.Entry, error) {
	s.listOnce.Do(func() { s.listed, s.listErr = s.list(ctx) })
	return s.listed, s.listErr
}

func (s *s3Source) list(ctx context.Context) ([]checkpoint.Entry, error) {
	var names []string
	seenKeys := map[string]bool{}
	seenTokens := map[string]bool{}
	var token *string
	for pages := 1; ; pages++ {
		if pages > maxListPages {
			return nil, fmt.Errorf("%s: the listing did not end after %d pages (S3 keeps answering with another continuation token)", s.display, maxListPages)
		}
		in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), Delimiter: aws.String("/"), ContinuationToken: token}
		var page *s3.ListObjectsV2Output
		err := remote.Retry(ctx, func() (err error) {
			rctx, cancel := context.WithTimeout(ctx, remote.Timeout(s.opt))
			defer cancel()
			page, err = s.client.ListObjectsV2(rctx, in)
			if err != nil {
				return s.apiError(s.display, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			n, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
			if !ok || n == "" {
				continue
			}
			if seenKeys[n] {
				// A page given again under another token: the listing
				// would never end.
				return nil, fmt.Errorf("%s: the listing names %q twice (page %d): S3 is repeating its pages", s.display, n, pages)
			}
			seenKeys[n] = true
			names = append(names, n)
		}
		if len(names) > maxListed {
			return nil, fmt.Errorf("%s: more than %d objects under the prefix", s.display, maxListed)
		}
		if !aws.ToBool(page.IsTruncated) {
			return remote.Entries(names), nil
		}
		next := aws.ToString(page.NextContinuationToken)
		switch {
		case next == "":
			return nil, fmt.Errorf("%s: S3 says the listing goes on after page %d but gives no continuation token", s.display, pages)
		case seenTokens[next]:
			return nil, fmt.Errorf("%s: S3 answered page %d with a continuation token it gave before: the listing would never end", s.display, pages)
		}
		seenTokens[next] = true
		token = aws.String(next)
	}
}

func (s *s3Source) openNow(ctx context.Context, name string) (checkpoint.File, error) {
	obj := &s3Object{src: s, key: s.prefix + name, display: s.Path(name)}
	f, err := s.OpenFile(ctx, s.Path(name), obj, remote.Probe(name), s.opt, true)
	if err != nil {
		return nil, err
	}
	s.Record(checkpoint.FileVersion{Name: name, Size: f.Size(), ETag: f.ETag()})
	return f, nil
}

// Remote names the bucket and prefix, and the objects read.
func (s *s3Source) Remote() *checkpoint.Remote {
	return &checkpoint.Remote{Kind: "s3", Name: strings.TrimSuffix(s.display, "/"), Listed: true, Files: s.Versions()}
}

// An s3Object is one object, read by ranged GetObject calls.
type s3Object struct {
	src     *s3Source
	key     string
	display string
}

func (o *s3Object) Get(ctx context.Context, off, n int64, etag string) (*remote.Part, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(o.src.bucket), Key: aws.String(o.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := o.src.client.GetObject(ctx, in)
	if err != nil {
		return nil, o.src.apiError(o.display, err)
	}
	pt := &remote.Part{Body: out.Body, Length: -1, Size: -1, ETag: aws.ToString(out.ETag)}
	if out.ContentLength != nil {
		pt.Length = *out.ContentLength
	}
	if out.ContentRange == nil {
		pt.Whole, pt.Size = true, pt.Length
		return pt, nil
	}
	start, _, size, ok := remote.ParseContentRange(*out.ContentRange)
	if !ok {
		out.Body.Close()
		return nil, &remote.Error{Path: o.display, Cause: fmt.Sprintf("a Content-Range of %q", *out.ContentRange)}
	}
	pt.Off, pt.Size = start, size
	return pt, nil
}

// apiError turns an SDK error into a remote.Error in words, without the
// SDK's request ids and operation names.
func (s *s3Source) apiError(p string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code, msg := "", ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	what := code
	if status != 0 {
		what = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", status, code))
	}
	if msg != "" && msg != code {
		what += ": " + msg
	}
	var se *smithyhttp.RequestSendError
	switch {
	case code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable:
		return &remote.Unsatisfiable{Size: -1}
	case code == "NoSuchBucket":
		return remote.NotFound(p, status, fmt.Sprintf("bucket %s does not exist (%s)", s.bucket, what))
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return remote.NotFound(p, status, "not found ("+what+")")
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return &remote.Error{Path: p, Status: status, Err: checkpoint.ErrChanged,
			Cause: fmt.Sprintf("%s: the object was replaced during the run (its ETag no longer matches: %s)", checkpoint.ErrChanged, what)}
	case code == "PermanentRedirect" || (status >= 300 && status < 400):
		return s.redirectError(p, status, code, what, re)
	case status == http.StatusForbidden || status == http.StatusUnauthorized || code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		hint := "check the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID) and the bucket policy"
		if s.opt.NoSignRequest {
			hint = "the bucket is not public: drop --no-sign-request and use AWS credentials"
		}
		return &remote.Error{Path: p, Status: status, Cause: "access denied (" + what + "): " + hint, Err: fs.ErrPermission}
	case status == http.StatusTooManyRequests || status >= 500 || code == "SlowDown" || code == "RequestTimeout":
		var ra time.Duration
		if re != nil && re.Response != nil {
			ra = remote.RetryAfter(re.Response.Header.Get("Retry-After"))
		}
		return &remote.Error{Path: p, Status: status, Cause: what, Temporary: true, RetryAfter: ra}
	case errors.As(err, &se):
		// The SDK's own retryer treats a failure to send or to read the
		// answer as retryable; so does this one, unless the run was
		// cancelled.
		return &remote.Error{Path: p, Cause: remote.NetCause(se.Err), Temporary: !errors.Is(se.Err, context.Canceled), Err: se.Err}
	case strings.Contains(err.Error(), "credentials"):
		return &remote.Error{Path: p, Cause: "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give --no-sign-request for a public bucket"}
	}
	if what == "" {
		var oe *smithy.OperationError
		if errors.As(err, &oe) {
			what = oe.Err.Error()
		} else {
			what = err.Error()
		}
	}
	return &remote.Error{Path: p, Status: status, Cause: what}
}

// redirectError is a 3xx from S3, never followed (see noRedirects): it
// names the bucket and where the answer pointed, and the region when S3
// says the bucket is in another one.
func (s *s3Source) redirectError(p string, status int, code, what string, re *awshttp.ResponseError) error {
	var h http.Header
	if re != nil && re.Response != nil {
		h = re.Response.Header
	}
	cause := fmt.Sprintf("bucket %s: S3 answered %s", s.bucket, what)
	if loc := h.Get("Location"); loc != "" {
		cause += fmt.Sprintf(", a redirect to %s, not followed (a signed request goes only to the endpoint it was signed for)", locationForMessage(loc))
	}
	if r := h.Get("X-Amz-Bucket-Region"); r != "" || (code == "PermanentRedirect" && status == http.StatusMovedPermanently) {
		cause += fmt.Sprintf("; the bucket is in another region%s: set AWS_REGION", inRegion(r))
	}
	return &remote.Error{Path: p, Status: status, Cause: cause}
}

// locationForMessage is a Location header as a message shows it: quoted,
// without credentials or query (a presigned URL's signature is one).
func locationForMessage(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "an unreadable Location"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return strconv.Quote(u.String())
}

func inRegion(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

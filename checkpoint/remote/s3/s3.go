package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3: s3://bucket/prefix through the AWS SDK for Go v2, with its
// credential chain (environment, AWS_PROFILE and the shared files, SSO,
// web identity, container and instance roles) and region resolution.
// AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 point it at an S3-compatible
// store, addressed path-style then. --no-sign-request reads public buckets
// without credentials.

// maxListed bounds a prefix's listing.
const maxListed = 1_000_000

// An s3Source reads the objects under one prefix of a bucket.
type s3Source struct {
	remoteBase
	client  *s3.Client
	bucket  string
	prefix  string // "" or ending in "/"
	display string // s3://bucket/prefix/

	listOnce sync.Once
	listed   []Entry
	listErr  error
}

func newS3Source(ctx context.Context, p string, opt *RemoteOptions) (remoteSource, target, error) {
	rest := p[len("s3://"):]
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, target{}, fmt.Errorf("%s: an s3:// path is s3://bucket/prefix", p)
	}
	dir, tg := splitTarget(key)
	s := &s3Source{remoteBase: remoteBase{opt: opt}, bucket: bucket}
	if dir != "" {
		s.prefix = dir + "/"
	}
	s.display = "s3://" + bucket + "/" + s.prefix
	client, err := newS3Client(ctx, bucket, opt)
	if err != nil {
		return nil, target{}, fmt.Errorf("%s: %w", p, err)
	}
	s.client = client
	return s, tg, nil
}

// newS3Client loads the SDK's configuration. With no region configured
// (and no endpoint of its own), the bucket's region is asked for.
func newS3Client(ctx context.Context, bucket string, opt *RemoteOptions) (*s3.Client, error) {
	// The SDK's client does not follow redirects (aws/transport/http
	// BuildableClient.Do): a signed request goes only to the endpoint it
	// was signed for. It also takes AWS_CA_BUNDLE.
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 64
		tr.DisableCompression = true
	})
	loads := []func(*config.LoadOptions) error{config.WithHTTPClient(hc)}
	if opt.NoSignRequest {
		loads = append(loads, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %v", err)
	}
	customEndpoint := false
	options := func(o *s3.Options) {
		// Retries are ckptcheck's own (the same for every source); the
		// SDK's would multiply them.
		o.Retryer = aws.NopRetryer{}
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if o.BaseEndpoint != nil {
			o.UsePathStyle, customEndpoint = true, true
		}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
		probe := s3.NewFromConfig(cfg, options)
		if !customEndpoint {
			if r := bucketRegion(ctx, probe, bucket, opt); r != "" {
				cfg.Region = r
			}
		}
	}
	return s3.NewFromConfig(cfg, options), nil
}

// bucketRegion asks S3 where a bucket is: HeadBucket answers with
// x-amz-bucket-region, also when it refuses the request.
func bucketRegion(ctx context.Context, c *s3.Client, bucket string, opt *RemoteOptions) string {
	ctx, cancel := context.WithTimeout(ctx, opt.timeout())
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

func (s *s3Source) rb() *remoteBase { return &s.remoteBase }

func (s *s3Source) Path(name string) string {
	if name == "." {
		return s.display
	}
	return s.display + name
}

func (s *s3Source) Open(ctx context.Context, name string) (File, error) { return s.open(ctx, s, name) }

// List lists the objects directly under the prefix (ListObjectsV2 with a
// "/" delimiter), once.
func (s *s3Source) List(ctx context.Context) ([]Entry, error) {
	s.listOnce.Do(func() { s.listed, s.listErr = s.list(ctx) })
	return s.listed, s.listErr
}

func (s *s3Source) list(ctx context.Context) ([]Entry, error) {
	var names []string
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix), Delimiter: aws.String("/")})
	for pages.HasMorePages() {
		var page *s3.ListObjectsV2Output
		var err error
		for attempt := 0; ; attempt++ {
			rctx, cancel := context.WithTimeout(ctx, s.opt.timeout())
			page, err = pages.NextPage(rctx)
			cancel()
			if err == nil {
				break
			}
			err = s.apiError(s.display, err)
			ok, after := retryable(err)
			if !ok || attempt+1 >= maxAttempts || after > maxRetryAfter {
				return nil, err
			}
			if after <= 0 {
				after = backoff(attempt)
			}
			if err := s.opt.wait(ctx, after); err != nil {
				return nil, err
			}
		}
		for _, o := range page.Contents {
			if n, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix); ok && n != "" {
				names = append(names, n)
			}
		}
		if len(names) > maxListed {
			return nil, fmt.Errorf("%s: more than %d objects under the prefix", s.display, maxListed)
		}
	}
	return entriesAt(names), nil
}

func (s *s3Source) openNow(ctx context.Context, name string) (File, error) {
	obj := &s3Object{src: s, key: s.prefix + name, display: s.Path(name)}
	f, err := openRemoteFile(ctx, s.Path(name), obj, probeSize(name), s.opt, true)
	if err != nil {
		return nil, err
	}
	s.record(FileVersion{Name: name, Size: f.size, ETag: f.etag})
	return f, nil
}

func (s *s3Source) remote() *Remote {
	return &Remote{Kind: "s3", Name: strings.TrimSuffix(s.display, "/"), Listed: true, Files: s.versions()}
}

// An s3Object is one object, read by ranged GetObject calls.
type s3Object struct {
	src     *s3Source
	key     string
	display string
}

func (o *s3Object) get(ctx context.Context, off, n int64, etag string) (*part, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(o.src.bucket), Key: aws.String(o.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := o.src.client.GetObject(ctx, in)
	if err != nil {
		return nil, o.src.apiError(o.display, err)
	}
	pt := &part{body: out.Body, length: -1, size: -1, etag: aws.ToString(out.ETag)}
	if out.ContentLength != nil {
		pt.length = *out.ContentLength
	}
	if out.ContentRange == nil {
		pt.whole, pt.size = true, pt.length
		return pt, nil
	}
	start, _, size, ok := parseContentRange(*out.ContentRange)
	if !ok {
		out.Body.Close()
		return nil, &RemoteError{Path: o.display, Cause: fmt.Sprintf("a Content-Range of %q", *out.ContentRange)}
	}
	pt.off, pt.size = start, size
	return pt, nil
}

// apiError turns an SDK error into a RemoteError in words, without the
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
		return &unsatisfiable{size: -1}
	case code == "NoSuchBucket":
		return notFound(p, status, fmt.Sprintf("bucket %s does not exist (%s)", s.bucket, what))
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return notFound(p, status, "not found ("+what+")")
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return &RemoteError{Path: p, Status: status, err: ErrChanged,
			Cause: fmt.Sprintf("%s: the object was replaced during the run (its ETag no longer matches: %s)", ErrChanged, what)}
	case code == "PermanentRedirect" || status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect:
		region := ""
		if re != nil && re.Response != nil {
			region = re.Response.Header.Get("X-Amz-Bucket-Region")
		}
		return &RemoteError{Path: p, Status: status, Cause: fmt.Sprintf("bucket %s is in another region%s: set AWS_REGION", s.bucket, inRegion(region))}
	case status == http.StatusForbidden || status == http.StatusUnauthorized || code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch":
		hint := "check the AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID) and the bucket policy"
		if s.opt.NoSignRequest {
			hint = "the bucket is not public: drop --no-sign-request and use AWS credentials"
		}
		return &RemoteError{Path: p, Status: status, Cause: "access denied (" + what + "): " + hint, err: fs.ErrPermission}
	case status == http.StatusTooManyRequests || status >= 500 || code == "SlowDown" || code == "RequestTimeout":
		var ra time.Duration
		if re != nil && re.Response != nil {
			ra = retryAfter(re.Response.Header.Get("Retry-After"))
		}
		return &RemoteError{Path: p, Status: status, Cause: what, temporary: true, retryAfter: ra}
	case errors.As(err, &se):
		temp, _ := retryable(se.Err)
		// The SDK's own retryer treats a failure to send or to read the
		// answer as retryable; so does this one.
		return &RemoteError{Path: p, Cause: netCause(se.Err), temporary: temp || !errors.Is(se.Err, context.Canceled), err: se.Err}
	case strings.Contains(err.Error(), "credentials"):
		return &RemoteError{Path: p, Cause: "no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give --no-sign-request for a public bucket"}
	}
	if what == "" {
		var oe *smithy.OperationError
		if errors.As(err, &oe) {
			what = oe.Err.Error()
		} else {
			what = err.Error()
		}
	}
	return &RemoteError{Path: p, Status: status, Cause: what}
}

func inRegion(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

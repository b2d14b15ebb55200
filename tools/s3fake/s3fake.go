package s3fake

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"

	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// New starts an S3 server (gofakes3, the protocol implementation) on
// 127.0.0.1 (or on host, such as "127.0.0.2", when given) whose buckets
// are the folders of root and whose objects are the files in them, served
// in place: a sparse 61 GB fixture is never read or held in memory.
// gofakes3's own backends keep objects in memory or in a database, hence
// this one. It is a remotetest.Server: it counts bytes, logs requests and
// takes interceptors like the others.
func New(root string, host ...string) (*remotetest.Server, error) {
	s, err := remotetest.NewServer("", host...)
	if err != nil {
		return nil, err
	}
	fake := gofakes3.New(&FileBackend{Root: root}, gofakes3.WithLogger(gofakes3.DiscardLog()), gofakes3.WithoutVersioning())
	s.SetHandler(fake.Server())
	return s, nil
}

// Env points the AWS SDK at an S3 server on loopback for the test, with
// static keys and nothing that could reach off the machine: no instance
// metadata, empty shared config and credentials files.
func Env(t testing.TB, url string) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIATESTKEY", "AWS_SECRET_ACCESS_KEY": "test-secret-key", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_ENDPOINT_URL_S3": url, "AWS_ENDPOINT_URL": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty,
	} {
		t.Setenv(k, v)
	}
}

// FileBackend is a gofakes3.Backend over a folder: a bucket per
// subfolder, an object per file (keys with slashes are nested paths).
// ETags come from size and modification time, not from the bytes.
type FileBackend struct {
	Root string
}

var _ gofakes3.Backend = (*FileBackend)(nil)

func (b *FileBackend) bucketDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", gofakes3.BucketNotFound(name)
	}
	d := filepath.Join(b.Root, name)
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", gofakes3.BucketNotFound(name)
	}
	return d, nil
}

func (b *FileBackend) objectPath(bucket, key string) (string, error) {
	d, err := b.bucketDir(bucket)
	if err != nil {
		return "", err
	}
	if !filepath.IsLocal(filepath.FromSlash(key)) {
		return "", gofakes3.KeyNotFound(key)
	}
	return filepath.Join(d, filepath.FromSlash(key)), nil
}

func fileETag(st os.FileInfo) []byte {
	h := md5.Sum(fmt.Appendf(nil, "%d %d", st.Size(), st.ModTime().UnixNano()))
	return h[:]
}

// ListBuckets lists the folders of the root.
func (b *FileBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	entries, err := os.ReadDir(b.Root)
	if err != nil {
		return nil, err
	}
	var out []gofakes3.BucketInfo
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, gofakes3.BucketInfo{Name: e.Name(), CreationDate: gofakes3.NewContentTime(time.Unix(0, 0))})
		}
	}
	return out, nil
}

// ListBucket lists the keys matching a prefix, sorted, paged by MaxKeys.
func (b *FileBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	d, err := b.bucketDir(name)
	if err != nil {
		return nil, err
	}
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	var keys []string
	filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			rel, _ := filepath.Rel(d, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(keys)
	out := gofakes3.NewObjectList()
	var match gofakes3.PrefixMatch
	count := int64(0)
	for _, k := range keys {
		if page.HasMarker && k <= page.Marker {
			continue
		}
		if !prefix.Match(k, &match) {
			continue
		}
		if match.CommonPrefix {
			out.AddPrefix(match.MatchedPart)
		} else {
			st, err := os.Stat(filepath.Join(d, filepath.FromSlash(k)))
			if err != nil {
				continue
			}
			out.Add(&gofakes3.Content{Key: k, LastModified: gofakes3.NewContentTime(st.ModTime()), ETag: gofakes3.FormatETag(fileETag(st)), Size: st.Size()})
		}
		count++
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			out.NextMarker, out.IsTruncated = k, k != keys[len(keys)-1]
			break
		}
	}
	return out, nil
}

// CreateBucket makes a folder.
func (b *FileBackend) CreateBucket(name string) error {
	if _, err := b.bucketDir(name); err == nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	return os.Mkdir(filepath.Join(b.Root, name), 0o755)
}

// BucketExists reports whether the folder exists.
func (b *FileBackend) BucketExists(name string) (bool, error) {
	_, err := b.bucketDir(name)
	return err == nil, nil
}

// DeleteBucket removes an empty folder.
func (b *FileBackend) DeleteBucket(name string) error {
	d, err := b.bucketDir(name)
	if err != nil {
		return err
	}
	if entries, _ := os.ReadDir(d); len(entries) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	return os.Remove(d)
}

// ForceDeleteBucket removes a folder and its files.
func (b *FileBackend) ForceDeleteBucket(name string) error {
	d, err := b.bucketDir(name)
	if err != nil {
		return err
	}
	return os.RemoveAll(d)
}

type sectionCloser struct {
	io.Reader
	io.Closer
}

// GetObject opens the file and reads the range from it as it is sent.
func (b *FileBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	p, err := b.objectPath(bucket, key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, gofakes3.KeyNotFound(key)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, gofakes3.KeyNotFound(key)
	}
	r, err := rng.Range(st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	obj := &gofakes3.Object{Name: key, Metadata: map[string]string{}, Size: st.Size(), Hash: fileETag(st), Range: r}
	if r != nil {
		obj.Contents = sectionCloser{io.NewSectionReader(f, r.Start, r.Length), f}
	} else {
		obj.Contents = f
	}
	return obj, nil
}

// HeadObject describes the file.
func (b *FileBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	p, err := b.objectPath(bucket, key)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return nil, gofakes3.KeyNotFound(key)
	}
	return &gofakes3.Object{Name: key, Metadata: map[string]string{}, Size: st.Size(), Hash: fileETag(st), Contents: io.NopCloser(strings.NewReader(""))}, nil
}

// DeleteObject removes the file.
func (b *FileBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	p, err := b.objectPath(bucket, key)
	if err != nil {
		return gofakes3.ObjectDeleteResult{}, err
	}
	os.Remove(p)
	return gofakes3.ObjectDeleteResult{}, nil
}

// PutObject writes the file.
func (b *FileBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	p, err := b.objectPath(bucket, key)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	f, err := os.Create(p)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	if _, err := io.Copy(f, input); err != nil {
		f.Close()
		return gofakes3.PutObjectResult{}, err
	}
	return gofakes3.PutObjectResult{}, f.Close()
}

// DeleteMulti removes several files.
func (b *FileBackend) DeleteMulti(bucket string, objects ...string) (gofakes3.MultiDeleteResult, error) {
	var res gofakes3.MultiDeleteResult
	for _, k := range objects {
		if _, err := b.DeleteObject(bucket, k); err != nil {
			res.Error = append(res.Error, gofakes3.ErrorResult{Key: k, Code: gofakes3.ErrInternal, Message: err.Error()})
			continue
		}
		res.Deleted = append(res.Deleted, gofakes3.ObjectID{Key: k})
	}
	return res, nil
}

// CopyObject copies a file.
func (b *FileBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(b, srcBucket, srcKey, dstBucket, dstKey, meta)
}

// ETagHex is the ETag FileBackend gives a file, without quotes.
func ETagHex(st os.FileInfo) string { return hex.EncodeToString(fileETag(st)) }

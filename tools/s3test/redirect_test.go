package s3test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/internal/remotetest"
	"github.com/ckptcheck/ckptcheck/tools/s3fake"
)

// TestS3NeverFollowsRedirects: an S3 endpoint that redirects to another
// server (another port on the same address, where net/http would copy
// Authorization, and another address) gets an error naming the bucket and
// the Location, and the other server, which holds the same objects, gets
// no request at all: no signed header left the endpoint, and no byte of
// the other server was read.
func TestS3NeverFollowsRedirects(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "bucket", "m"))
	s := newS3(t, root)
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		other, err := s3fake.New(root, host)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", host, err)
		}
		t.Cleanup(other.Close)
		for _, tc := range []struct {
			name string
			code int
			// objectsOnly redirects the object reads, not the listing.
			objectsOnly bool
			path        string
		}{
			{"listing 307", http.StatusTemporaryRedirect, false, "s3://bucket/m"},
			{"listing 308", http.StatusPermanentRedirect, false, "s3://bucket/m"},
			{"object 307", http.StatusTemporaryRedirect, true, "s3://bucket/m/model.safetensors.index.json"},
			{"object 308", http.StatusPermanentRedirect, true, "s3://bucket/m"},
			{"object 302", http.StatusFound, true, "s3://bucket/m/model-00001-of-00003.safetensors"},
			{"object 301", http.StatusMovedPermanently, true, "s3://bucket/m"},
		} {
			t.Run(host+" "+tc.name, func(t *testing.T) {
				other.Reset()
				s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
					if tc.objectsOnly && r.URL.Query().Has("list-type") {
						return false
					}
					http.Redirect(w, r, other.URL+r.URL.RequestURI(), tc.code)
					return true
				})
				defer s.Intercept(nil)
				var w remotetest.Waits
				c, err := open(tc.path, remoteOpts(&w))
				if err == nil {
					c.Close()
					t.Fatal("opened through a redirect")
				}
				msg := err.Error()
				if !strings.Contains(msg, "bucket bucket") || !strings.Contains(msg, `"`+other.URL+"/bucket") || !strings.Contains(msg, "not followed") {
					t.Errorf("error %q does not name the bucket and the Location", msg)
				}
				if strings.Contains(msg, "X-Amz-") || strings.Contains(msg, "test-secret-key") {
					t.Errorf("error %q shows a credential", msg)
				}
				if n := other.Requests(); n != 0 {
					t.Errorf("the server redirected to got %d requests: %+v", n, other.Log())
				}
				if len(w.List()) != 0 {
					t.Errorf("a redirect was retried: waits %v", w.List())
				}
			})
		}
	}
}

// TestS3RegionRedirect: S3's answer for a bucket in another region (301
// PermanentRedirect, no Location) says to set AWS_REGION.
func TestS3RegionRedirect(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "bucket"), 0o755)
	s := newS3(t, root)
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("X-Amz-Bucket-Region", "eu-west-3")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusMovedPermanently)
		w.Write([]byte(`<?xml version="1.0"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message></Error>`))
		return true
	})
	var w remotetest.Waits
	_, err := open("s3://bucket/m", remoteOpts(&w))
	if err == nil || !strings.Contains(err.Error(), "bucket bucket") || !strings.Contains(err.Error(), "another region (eu-west-3): set AWS_REGION") {
		t.Errorf("%v", err)
	}
}

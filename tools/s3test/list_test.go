package s3test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptcheck/ckptcheck/internal/remotetest"
)

// maxListPages is checkpoint/remote/s3's bound on the pages of a listing
// (unexported there; this test, in another module for its S3 fake, says
// it again).
const maxListPages = 2_000

// listPage is a ListObjectsV2 answer under prefix m/ with keys, truncated
// with token next when next is not "".
func listPage(w http.ResponseWriter, keys []string, next string) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>m/</Prefix><Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys>`)
	fmt.Fprintf(&b, "<KeyCount>%d</KeyCount><IsTruncated>%v</IsTruncated>", len(keys), next != "")
	for _, k := range keys {
		fmt.Fprintf(&b, "<Contents><Key>m/%s</Key><Size>100</Size><ETag>&quot;e&quot;</ETag></Contents>", k)
	}
	if next != "" {
		fmt.Fprintf(&b, "<NextContinuationToken>%s</NextContinuationToken>", next)
	}
	b.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	w.Write([]byte(b.String()))
}

// TestS3ListingEnds: a listing server that repeats or invents
// continuation tokens is stopped with an error, soon.
func TestS3ListingEnds(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "bucket", "m"))
	s := newS3(t, root)
	for _, tc := range []struct {
		name string
		// page answers the request for page n (0-based) with token tok.
		page  func(w http.ResponseWriter, n int64, tok string)
		want  string
		pages int64 // the requests expected, 0 for any
	}{
		{"the same token again", func(w http.ResponseWriter, n int64, tok string) {
			listPage(w, []string{fmt.Sprintf("f%d.safetensors", n)}, "again")
		}, "a continuation token it gave before", 2},
		{"a cycle of two tokens", func(w http.ResponseWriter, n int64, tok string) {
			listPage(w, []string{fmt.Sprintf("f%d.safetensors", n)}, map[string]string{"": "a", "a": "b", "b": "a"}[tok])
		}, "a continuation token it gave before", 3},
		{"the same page under new tokens", func(w http.ResponseWriter, n int64, tok string) {
			listPage(w, []string{"model.safetensors"}, fmt.Sprintf("t%d", n))
		}, `names "model.safetensors" twice (page 2)`, 2},
		{"empty pages under new tokens", func(w http.ResponseWriter, n int64, tok string) {
			listPage(w, nil, fmt.Sprintf("t%d", n))
		}, fmt.Sprintf("did not end after %d pages", maxListPages), maxListPages},
		{"truncated without a token", func(w http.ResponseWriter, n int64, tok string) {
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(`<?xml version="1.0"?><ListBucketResult><Name>bucket</Name><IsTruncated>true</IsTruncated></ListBucketResult>`))
		}, "gives no continuation token", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				if !r.URL.Query().Has("list-type") {
					return false
				}
				tc.page(w, n.Add(1)-1, r.URL.Query().Get("continuation-token"))
				return true
			})
			defer s.Intercept(nil)
			var w remotetest.Waits
			start := time.Now()
			c, err := open("s3://bucket/m", remoteOpts(&w))
			if err == nil {
				c.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "s3://bucket/m/: ") {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			if tc.pages != 0 && n.Load() != tc.pages {
				t.Errorf("%d pages asked for, want %d", n.Load(), tc.pages)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestS3ListingPages: a listing of several pages is read whole.
func TestS3ListingPages(t *testing.T) {
	root := t.TempDir()
	writeTiny(t, filepath.Join(root, "bucket", "m"))
	s := newS3(t, root)
	var n atomic.Int64
	names := []string{"config.json", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors", "model.safetensors.index.json"}
	s.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !r.URL.Query().Has("list-type") {
			return false
		}
		i := n.Add(1) - 1
		next := ""
		if int(i) < len(names)-1 {
			next = fmt.Sprintf("t%d", i+1)
		}
		listPage(w, names[i:i+1], next)
		return true
	})
	var w remotetest.Waits
	c := openRemoteT(t, "s3://bucket/m", remoteOpts(&w))
	if len(c.Shards) != 3 || n.Load() != int64(len(names)) {
		t.Errorf("%d shards from %d pages", len(c.Shards), n.Load())
	}
}

package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

func TestHTTPSizeFromContentRange(t *testing.T) {
	dir := t.TempDir()
	full := paddedFile(300)
	os.WriteFile(filepath.Join(dir, "truncated.safetensors"), full[:len(full)-3], 0o644)
	os.WriteFile(filepath.Join(dir, "trailing.safetensors"), append(full, 1, 2, 3), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.safetensors"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "short.safetensors"), []byte{1, 2, 3}, 0o644)
	s := serve(t, dir)
	var w waits
	for name, kind := range map[string]safetensors.ErrorKind{
		"truncated": safetensors.MetadataIncompleteBuffer, "trailing": safetensors.MetadataIncompleteBuffer,
		"empty": safetensors.HeaderTooSmall, "short": safetensors.HeaderTooSmall,
	} {
		c := openRemoteT(t, s.URL+"/"+name+".safetensors", remoteOpts(&w))
		var fe *safetensors.FormatError
		if !errors.As(c.Shards[0].Err, &fe) || fe.Kind != kind {
			t.Errorf("%s: %v, want %v", name, c.Shards[0].Err, kind)
		}
	}
}

func TestHTTPServerIgnoringRange(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "small.safetensors"), paddedFile(1000), 0o644)
	big := paddedFile(1000)
	f, _ := os.Create(filepath.Join(dir, "big.safetensors"))
	f.Write(big)
	f.Truncate(512 << 20) // a sparse 512 MiB file: its tail is trailing bytes
	f.Close()
	s := serve(t, dir)
	s.SetNoRange(true)
	var w waits
	// A 200 whose length fits the range is a small file, read whole.
	c := openRemoteT(t, s.URL+"/small.safetensors", remoteOpts(&w))
	if c.Shards[0].File == nil || c.Shards[0].Err != nil {
		t.Fatalf("small file: %+v", c.Shards[0])
	}
	// A 200 starting to send a larger file stops at once.
	s.Reset()
	_, err := open(s.URL+"/big.safetensors", remoteOpts(&w))
	if !errors.Is(err, errIgnoresRange) || !strings.Contains(err.Error(), "536,870,912-byte file") {
		t.Fatalf("big file: %v", err)
	}
	if s.Bytes() > 64<<20 { // Bytes waits for the answers under way
		t.Errorf("%d bytes sent before stopping", s.Bytes())
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in                string
		first, last, size int64
		ok                bool
	}{
		{"bytes 0-100007/61000000000", 0, 100007, 61000000000, true},
		{"bytes 5-9/*", 5, 9, -1, true},
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 0-9/9", 0, 0, 0, false}, // the last byte past the end
		{"bytes 9-0/10", 0, 0, 0, false},
		{"bytes */10", 0, 0, 0, false},
		{"items 0-9/10", 0, 0, 0, false},
		{"bytes -1-9/10", 0, 0, 0, false},
	} {
		f, l, s, ok := ParseContentRange(tc.in)
		if ok != tc.ok || (ok && (f != tc.first || l != tc.last || s != tc.size)) {
			t.Errorf("%q: %d %d %d %v", tc.in, f, l, s, ok)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-100007/61000000000", "bytes 5-9/*", "bytes */0", "bytes 1-0/5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, size, ok := ParseContentRange(s)
		if ok && (first < 0 || last < first || (size != -1 && size <= last)) {
			t.Errorf("%q: %d-%d/%d accepted", s, first, last, size)
		}
	})
}

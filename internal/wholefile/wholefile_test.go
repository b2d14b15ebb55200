package wholefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A case is a path made by setup and what reading it under the cap gives.
type readCase struct {
	name  string
	setup func(t *testing.T) string
	want  string // the contents, when read
	err   error  // or an error wrapping this
	msg   string // and containing this
}

var testLimit = Limit{Kind: "--policy", Max: 1 << 10}

func TestReadFile(t *testing.T) {
	write := func(content string) func(t *testing.T) string {
		return func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	cases := []readCase{
		{name: "small", setup: write("rules"), want: "rules"},
		{name: "empty", setup: write(""), want: ""},
		{name: "at the cap", setup: write(strings.Repeat("x", 1<<10)), want: strings.Repeat("x", 1<<10)},
		{name: "over the cap", setup: write(strings.Repeat("x", 1<<10+1)), err: ErrTooLarge, msg: "file is larger than 1 KiB (1,025 bytes)"},
		{name: "missing", setup: func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") }, err: fs.ErrNotExist, msg: "absent: no such file"},
		{name: "directory", setup: func(t *testing.T) string { return t.TempDir() }, err: ErrNotRegular, msg: "is a directory, not a regular file"},
	}
	cases = append(cases, specialCases...)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.setup(t)
			got, err := readWithin(t, path)
			if tt.err == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				if cap(got) > len(tt.want)+1 {
					t.Errorf("buffer of %d bytes for a file of %d", cap(got), len(tt.want))
				}
				return
			}
			var e *Error
			if !errors.Is(err, tt.err) || !errors.As(err, &e) || e.Path != path {
				t.Fatalf("error %v, want one wrapping %v for %s", err, tt.err, path)
			}
			if errors.Is(err, ErrNotRegular) && e.Mode.IsRegular() {
				t.Errorf("Mode %v for a file that is not regular", e.Mode)
			}
			if want := "--policy " + path + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q, want %q...%q", err, want, tt.msg)
			}
		})
	}
}

// readWithin reads path under testLimit, failing the test rather than
// hanging if the read does not end within seconds.
func readWithin(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := ReadFile(path, testLimit)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("reading %s did not end", path)
		return nil, nil
	}
}

// A file that grows after it was opened is read to its end while under the
// cap, and refused once past it, however the size looked at the open.
func TestGrowingFile(t *testing.T) {
	for _, tt := range []struct {
		name   string
		grow   int
		tooBig bool
	}{
		{"within the cap", 100, false},
		{"past the cap", 1 << 10, true},
		{"far past the cap", 1 << 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			start := bytes.Repeat([]byte("a"), 10)
			if err := os.WriteFile(p, start, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(p, testLimit)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Size() != 10 {
				t.Errorf("size %d", r.Size())
			}
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(bytes.Repeat([]byte("b"), tt.grow))
			f.Close()
			b, err := r.ReadAll()
			if tt.tooBig {
				if !errors.Is(err, ErrTooLarge) || err.Error() != "--policy "+p+": file is larger than 1 KiB" {
					t.Fatalf("got %d bytes, %v; want too large", len(b), err)
				}
				return
			}
			if err != nil || len(b) != 10+tt.grow {
				t.Fatalf("got %d bytes, %v; want %d", len(b), err, 10+tt.grow)
			}
		})
	}
}

// Read stops at the cap and stays stopped.
func TestReaderStaysOverCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("abcdef"), 0o644)
	r, err := Open(p, Limit{Max: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	os.WriteFile(p, []byte("abcdefgh"), 0o644)
	buf := make([]byte, 100)
	n, err := r.Read(buf)
	if n != 6 || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("read %d, %v", n, err)
	}
	if n, err := r.Read(buf); n != 0 || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("second read %d, %v", n, err)
	}
	if want := p + ": file is larger than 6 bytes"; err.Error() != want {
		t.Errorf("%q, want %q (no kind, no prefix)", err, want)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{1 << 20: "1 MiB", 16 << 20: "16 MiB", 1 << 30: "1 GiB", 4096: "4 KiB", 1500: "1500 bytes", 0: "0 bytes", 3 << 29: "1536 MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

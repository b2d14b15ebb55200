package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
)

// Reading the files beside the weights to say what changed in them, within
// bounded memory: streamed through a decoder rather than read whole, and
// each decoded once per side.

// stream opens a side's file for reading as a stream, or nil when the side
// does not have it; a file over maxCompanionRead is errTooLargeToShow.
// Read errors name the file.
func (s *companions) stream(ctx context.Context, name string) (io.Reader, func() error, error) {
	if _, ok := s.files[name]; !ok {
		return nil, nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f, err := s.c.Source.Open(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.path(name), err)
	}
	if f.Size() > maxCompanionRead {
		f.Close()
		return nil, nil, errTooLargeToShow
	}
	r := &pathReader{r: io.NewSectionReader(f, 0, f.Size()), path: s.path(name)}
	return bufio.NewReaderSize(r, 1<<20), f.Close, nil
}

// pathReader names its file in read errors.
type pathReader struct {
	r    io.Reader
	path string
}

func (p *pathReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", p.path, err)
	}
	return n, err
}

// object decodes a side's JSON file as an object, numbers as written,
// once: callers must not change it (maps.Clone first). nil, false when the
// side lacks it, it is too large, or it is not a JSON object.
func (s *companions) object(ctx context.Context, name string) (map[string]any, bool, error) {
	if m, ok := s.objects[name]; ok {
		return m, m != nil, nil
	}
	b, err := s.bytes(ctx, name)
	if errors.Is(err, errTooLargeToShow) || b == nil && err == nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	m := decodeObject(b)
	if sharedObjects()[name] {
		if s.objects == nil {
			s.objects = make(map[string]map[string]any)
		}
		s.objects[name] = m
	}
	return m, m != nil, nil
}

// decodeObject decodes a JSON object, numbers as written; nil when b does
// not start with one. The file is in memory at its size, and each member
// is decoded on its own: a decoder reading it as a stream would buffer the
// largest member (a 40 MB chat template) in a buffer grown by doubling.
// What is not one JSON object takes the decoder, which reads the first
// value and ignores what follows it.
func decodeObject(b []byte) map[string]any {
	var raw map[string]json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) != nil {
			return nil
		}
		return m
	}
	if raw == nil {
		return nil
	}
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		x, ok := decodeValue(v)
		if !ok {
			return nil
		}
		m[k] = x
		delete(raw, k) // its bytes can go once decoded
	}
	return m
}

// sharedObjects are the files more than one comparison reads (the chat
// template, the special tokens), kept decoded; others are decoded for
// their one reader and let go.
var sharedObjects = sync.OnceValue(func() map[string]bool {
	return map[string]bool{"tokenizer_config.json": true, "special_tokens_map.json": true, "chat_template.json": true}
})

// entryCount counts the members of a side's JSON table (an object or
// array) as a stream; ok is false when the side lacks it or it is too
// large. A file that is not JSON counts the members before the fault.
func entryCount(ctx context.Context, s *companions, name string) (n int, ok bool, err error) {
	r, done, err := s.stream(ctx, name)
	if errors.Is(err, errTooLargeToShow) || r == nil && err == nil {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer done()
	ts := newTokenStream(r)
	t, err := ts.token()
	if err == nil {
		var sum jsonSummary
		sum, err = ts.summarise(t, false)
		n = sum.count
	}
	if err != nil && !errors.Is(err, errNotJSON) {
		return 0, false, err
	}
	return n, true, nil
}

// objectCopy is object, shallowly copied for a caller that deletes
// fields.
func (s *companions) objectCopy(ctx context.Context, name string) (map[string]any, bool, error) {
	m, ok, err := s.object(ctx, name)
	return maps.Clone(m), ok, err
}

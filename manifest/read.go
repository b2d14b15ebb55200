package manifest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// WriteJSON writes the manifest as one indented JSON document.
func (m *Manifest) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// maxManifest bounds a manifest read: one for a 600B-parameter MoE model
// (100k tensors) is about 25 MB.
const maxManifest = 1 << 30

// Read reads a manifest written by WriteJSON. Another schema, a
// malformed entry (a digest that is not hex of the right length, an unknown
// dtype) or a name given twice is an error saying where.
func Read(r io.Reader) (*Manifest, error) {
	lr := &io.LimitedReader{R: r, N: maxManifest + 1}
	var m Manifest
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&m); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("not a ckptcheck manifest: larger than %s bytes", textfmt.Thousands(maxManifest))
		}
		return nil, fmt.Errorf("not a ckptcheck manifest: %v", textfmt.JSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a ckptcheck manifest: more than one JSON value")
	}
	if m.Schema == "" {
		return nil, fmt.Errorf("not a ckptcheck manifest: no \"schema\": %q", Schema)
	}
	if m.Schema != Schema {
		return nil, fmt.Errorf("manifest schema %q, want %q", m.Schema, Schema)
	}
	files := make(map[string]bool, len(m.Files))
	for i, f := range m.Files {
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("manifest files[%d]: no name", i)
		case files[f.Name]:
			return nil, fmt.Errorf("manifest files[%d]: %s is listed twice", i, textfmt.Quote(f.Name))
		case f.Size < 0:
			return nil, fmt.Errorf("manifest files[%d] (%s): negative size", i, textfmt.Quote(f.Name))
		case !isHex(f.SHA256, 64):
			return nil, fmt.Errorf("manifest files[%d] (%s): sha256 %q is not 64 hex digits", i, textfmt.Quote(f.Name), f.SHA256)
		}
		files[f.Name] = true
		m.Files[i].SHA256 = strings.ToLower(f.SHA256)
	}
	tensors := make(map[string]bool, len(m.Tensors))
	for i, t := range m.Tensors {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("manifest tensors[%d]: no name", i)
		case tensors[t.Name]:
			return nil, fmt.Errorf("manifest tensors[%d]: %s is listed twice", i, textfmt.Quote(t.Name))
		case !isHex(t.XXH3, 16):
			return nil, fmt.Errorf("manifest tensors[%d] (%s): xxh3 %q is not 16 hex digits", i, textfmt.Quote(t.Name), t.XXH3)
		}
		if _, ok := safetensors.ParseDType(t.DType); !ok {
			return nil, fmt.Errorf("manifest tensors[%d] (%s): unknown dtype %q", i, textfmt.Quote(t.Name), t.DType)
		}
		tensors[t.Name] = true
		m.Tensors[i].XXH3 = strings.ToLower(t.XXH3)
	}
	m.sort()
	return &m, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// IsManifest reports whether doc is a JSON object whose "schema" member
// says it is a manifest, however its keys are ordered or spaced (jq -c
// output): merge tells partial manifests from reports by it. Anything else
// (another schema, none, not JSON) is not a manifest. It reads up to the
// schema member, bounded by doc's size and strictjson's nesting limit.
func IsManifest(doc []byte) bool {
	if !strictjson.Valid(doc) {
		return false
	}
	d := strictjson.NewDecoder(doc, 0)
	if d.Peek() != '{' {
		return false
	}
	var schema string
	found := errors.New("found")
	err := d.Members(func(key string) error {
		if key != "schema" {
			return d.Skip()
		}
		s, err := d.Str()
		if err != nil {
			return err
		}
		schema = s
		return found
	})
	return (err == nil || err == found) && schema == Schema
}

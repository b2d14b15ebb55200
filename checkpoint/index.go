package checkpoint

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/strictjson"
)

// An Index is a parsed index file (model.safetensors.index.json, see
// HFIndex): which shard holds each tensor.
type Index struct {
	// Name is the index file's name in the checkpoint, Path how reports name it.
	Name, Path string
	// TotalSize is metadata.total_size, nil when absent.
	TotalSize *uint64
	// WeightMap maps tensor names to shard names, cleaned: "./a.safetensors"
	// is "a.safetensors", so that one file named two ways is one shard.
	WeightMap map[string]string
}

// ShardNames lists the distinct shard names the index maps to, sorted.
func (idx *Index) ShardNames() []string {
	seen := make(map[string]bool)
	var names []string
	for _, f := range idx.WeightMap {
		if !seen[f] {
			seen[f] = true
			names = append(names, f)
		}
	}
	slices.Sort(names)
	return names
}

// ShardOf returns the shard name the index maps a tensor to.
func (idx *Index) ShardOf(tensor string) (string, bool) {
	f, ok := idx.WeightMap[tensor]
	return f, ok
}

// cleanName is a shard name as the index writes it, without "./" and
// doubled slashes, so that one file named two ways is opened once. A name
// that cleans to something unsafe keeps its text, so UnsafeName sees it.
func cleanName(name string) string {
	if !strings.ContainsAny(name, "/\\") {
		return name
	}
	c := path.Clean(name)
	if UnsafeName(c) != "" {
		return name
	}
	return c
}

// ParseIndex parses a Hugging Face index file's bytes. An error says why
// they are no usable index (not JSON, no weight_map, a value that is not a
// string); the Index is then nil.
func ParseIndex(b []byte) (*Index, error) {
	wm, total, err := parseIndexJSON(b)
	if err != nil {
		return nil, err
	}
	return &Index{WeightMap: wm, TotalSize: total}, nil
}

// parseIndexJSON reads an index.json: an object whose "weight_map" maps
// tensor names to file names and whose "metadata" may hold "total_size".
// The strict decoder is several times faster than encoding/json on the
// ~20,000-entry indexes of large MoE models.
func parseIndexJSON(b []byte) (weightMap map[string]string, totalSize *uint64, err error) {
	if !strictjson.Valid(b) {
		return nil, nil, errors.New("not UTF-8 text")
	}
	d := strictjson.NewDecoder(b, 0)
	if d.Peek() != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	err = d.Members(func(key string) error {
		switch key {
		case "weight_map":
			if d.Peek() != '{' {
				return errors.New("weight_map is not an object")
			}
			weightMap = make(map[string]string, len(b)/96) // ~70 bytes an entry: bounded by the file
			cleaned := map[string]string{}                 // a few distinct shard names, each cleaned once
			return d.Members(func(name string) error {
				if d.Peek() != '"' {
					return fmt.Errorf("weight_map value for %q is not a string", name)
				}
				file, err := d.Str()
				c, ok := cleaned[file]
				if !ok {
					c = cleanName(file)
					cleaned[file] = c
				}
				weightMap[name] = c
				return err
			})
		case "metadata":
			if d.Peek() != '{' {
				return d.Skip()
			}
			return d.Members(func(k string) error {
				if k != "total_size" || d.Peek() < '0' || d.Peek() > '9' {
					return d.Skip()
				}
				num, err := d.Number()
				if err != nil {
					return err
				}
				// Some writers emit total_size as a float.
				v, err := strconv.ParseUint(num, 10, 64)
				if err != nil {
					f, ferr := strconv.ParseFloat(num, 64)
					if ferr != nil || f < 0 || f >= 1<<63 || f != float64(uint64(f)) {
						return fmt.Errorf("metadata.total_size %s is not a byte count", num)
					}
					v = uint64(f)
				}
				totalSize = &v
				return nil
			})
		}
		return d.Skip()
	})
	if err == nil && !d.End() {
		err = d.Fail("trailing characters after the object")
	}
	if err == nil && weightMap == nil {
		err = errors.New("no weight_map object")
	}
	var se *strictjson.SyntaxError
	if errors.As(err, &se) {
		err = fmt.Errorf("not a JSON index: %s (at byte %d)", se.Msg, se.Offset)
	}
	if err != nil {
		return nil, nil, err
	}
	return weightMap, totalSize, nil
}

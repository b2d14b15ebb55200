package verify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/torchsave"
)

// maxDCPMetadata bounds the .metadata read into memory: far more than a
// step of a 600B model's thousands of tensors and chunks needs.
const maxDCPMetadata = 1 << 30

// IsDCPDir reports whether a local path is a torch.distributed checkpoint
// step directory: a directory holding .metadata.
func IsDCPDir(path string) bool {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return false
	}
	st, err := os.Stat(filepath.Join(path, torchsave.DCPMetadataName))
	return err == nil && st.Mode().IsRegular()
}

// A DCPStep is a DCP step directory's metadata, read and checked.
type DCPStep struct {
	Dir      string
	Metadata *torchsave.DCPMetadata // nil when .metadata could not be read
	Files    []string               // the item files chunks name, in first-use order
}

// ValidateDCP checks a local DCP step directory: .metadata read without
// running it (unsafe_pickle, dcp_bad_metadata), every relative_path by
// checkpoint.UnsafePath's rules, each tensor's chunks tiling it exactly
// (dcp_chunk_gap, dcp_chunk_overlap), transforms (dcp_unsupported_transform),
// and each model or trainer tensor chunk's item: within its file, and a
// torch.save archive or safetensors blob entry of one tensor of the
// chunk's shape and dtype (torchsave.DCPItems). The
// error is for a directory that cannot be read at all.
func ValidateDCP(dir string) (*DCPStep, []Finding, error) {
	step := &DCPStep{Dir: dir}
	metaPath := filepath.Join(dir, torchsave.DCPMetadataName)
	b, err := readBounded(metaPath, maxDCPMetadata)
	if err != nil {
		return nil, nil, err
	}
	md, err := torchsave.ReadDCPMetadata(b)
	if err == nil {
		err = md.CheckPaths(checkpoint.UnsafePath)
	}
	var fe *torchsave.FormatError
	if errors.As(err, &fe) {
		fe.Entry = ""
		return step, []Finding{torchFinding(metaPath, fe)}, nil
	} else if err != nil {
		return nil, nil, err
	}
	step.Metadata = md
	items := &dcpItems{dir: dir, open: map[string]*os.File{}}
	defer items.close()
	var out []Finding
	for i := range md.Tensors {
		t := &md.Tensors[i]
		if err := t.Tiling(); errors.As(err, &fe) {
			fe.Entry = ""
			out = append(out, torchFinding(metaPath, fe))
		}
		if err := t.Transform(); errors.As(err, &fe) {
			file := filepath.Join(dir, filepath.FromSlash(fe.Entry))
			fe.Entry = ""
			out = append(out, torchFinding(file, fe))
			continue // its items are not plain torch.save archives
		}
		for _, c := range t.Chunks {
			if f := items.check(t, c); f != nil {
				out = append(out, *f)
				break // one finding for a tensor's items
			}
		}
	}
	step.Files = items.names
	return step, out, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// dcpItems opens a step's item files once each.
type dcpItems struct {
	dir   string
	open  map[string]*os.File
	sizes map[string]int64
	names []string
	read  *torchsave.DCPItems
}

func (d *dcpItems) close() {
	for _, f := range d.open {
		f.Close()
	}
}

func (d *dcpItems) file(rel string) (*os.File, int64, error) {
	if f, ok := d.open[rel]; ok {
		return f, d.sizes[rel], nil
	}
	f, err := os.Open(filepath.Join(d.dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if d.sizes == nil {
		d.sizes = map[string]int64{}
	}
	d.open[rel], d.sizes[rel] = f, st.Size()
	d.names = append(d.names, rel)
	return f, st.Size(), nil
}

// check reads a chunk's item, a torch.save archive (the writer
// torchtitan uses writes each tensor item so) or a safetensors blob's
// entry (torchsave.DCPItems), and compares it with the chunk.
func (d *dcpItems) check(t *torchsave.DCPTensor, c torchsave.DCPChunk) *Finding {
	path := filepath.Join(d.dir, filepath.FromSlash(c.Item.RelativePath))
	bad := func(format string, args ...any) *Finding {
		return &Finding{Code: CodeDCPBadMetadata, Severity: Error, File: path, Key: t.FQN, Message: fmt.Sprintf(format, args...)}
	}
	f, size, err := d.file(c.Item.RelativePath)
	if err != nil {
		return bad("chunk %v's item: %v", c.Offsets, err)
	}
	if c.Item.Offset > uint64(size) || c.Item.Length > uint64(size)-c.Item.Offset {
		return bad("chunk %v's item [%d, +%d) reaches past the file's %d bytes", c.Offsets, c.Item.Offset, c.Item.Length, size)
	}
	if d.read == nil {
		d.read = torchsave.NewDCPItems()
	}
	_, err = d.read.Chunk(f, size, t, c)
	var fe *torchsave.FormatError
	if errors.As(err, &fe) {
		fe.Tensor = t.FQN
		if fe.Kind == torchsave.DCPBadMetadata {
			fe.Entry = "" // the item file, which the finding names
		}
		found := torchFinding(path, fe)
		return &found
	} else if err != nil {
		return bad("chunk %v's item: %v", c.Offsets, err)
	}
	return nil
}

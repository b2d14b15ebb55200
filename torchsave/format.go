package torchsave

import (
	"bytes"
	"encoding/binary"
	"io"
	"regexp"
	"sync"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// The torch format registers itself with tensorfile, so that linking this
// package is what makes .bin, .pt and .pth files readable through the
// registry.
func init() { tensorfile.Register(format{}) }

// Name is the format's name in the tensorfile registry.
const Name = "torch"

var extensions = []string{".bin", ".pt", ".pth"}

type format struct{}

func (format) Name() string { return Name }

// Extensions returns a fresh slice: the registry's callers may keep it.
func (format) Extensions() []string { return append([]string(nil), extensions...) }

// Sniff accepts the legacy format's magic pickle, and a zip archive whose
// first entry is a record folder's data.pkl (as much of its name as the
// prefix holds: a long folder name is cut off).
func (format) Sniff(prefix []byte, size int64) bool {
	if bytes.HasPrefix(prefix, legacyMagic) {
		return true
	}
	if len(prefix) < 30 || !bytes.HasPrefix(prefix, zipMagic) {
		return false
	}
	n := int(binary.LittleEndian.Uint16(prefix[26:]))
	name := prefix[30:min(len(prefix), 30+n)]
	if n <= len("/data.pkl") || bytes.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' || r == '/')
	}) {
		return false
	}
	i := bytes.IndexByte(name, '/')
	if len(name) == n {
		return i > 0 && string(name[i:]) == "/data.pkl"
	}
	// The name is cut off: what shows must be a folder and the start of
	// data.pkl.
	return i < 0 || i > 0 && bytes.HasPrefix([]byte("/data.pkl"), name[i:])
}

// weightNames are the torch.save files of a folder that hold a model's
// weights, as transformers names them (WEIGHTS_NAME pytorch_model.bin, its
// shards pytorch_model-00001-of-00002.bin and variants
// pytorch_model.fp16.bin; diffusers' diffusion_pytorch_model.bin). A
// trainer's other pickles (training_args.bin, optimizer.pt, scheduler.pt,
// rng_state.pth) are not.
var weightNames = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(diffusion_)?pytorch_model([.-][A-Za-z0-9_.-]*)?\.bin$`)
})

// WeightFile reports whether a file of a folder listing holds weights (see
// weightNames); checkpoint reads only those of a folder. A file named on
// the command line is read whatever its name.
func (format) WeightFile(name string) bool { return weightNames().MatchString(name) }

func (format) Open(r io.ReaderAt, size int64) (tensorfile.File, error) {
	f, err := NewFile(r, size)
	if err != nil {
		return nil, err // an untyped nil File, never a nil *File in it
	}
	return f, nil
}

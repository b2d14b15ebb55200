package torchsave

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

const dcpFixtures = "../testdata/dcp"

func readDCP(t *testing.T, step string) *DCPMetadata {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dcpFixtures, step, DCPMetadataName))
	if err != nil {
		t.Fatal(err)
	}
	md, err := ReadDCPMetadata(b)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if err := md.CheckPaths(checkpoint.UnsafePath); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return md
}

func TestReadDCPMetadataFixture(t *testing.T) {
	md := readDCP(t, "good")
	type want struct {
		part   DCPPart
		dtype  tensorfile.DType
		shape  []uint64
		chunks int
	}
	wants := map[string]want{
		"model.w":                         {DCPModel, tensorfile.F32, []uint64{4, 6}, 2},
		"model.b":                         {DCPModel, tensorfile.BF16, []uint64{6}, 1},
		"optimizer.state.model.w.exp_avg": {DCPOptimizer, tensorfile.F32, []uint64{4, 6}, 1},
	}
	if len(md.Tensors) != len(wants) {
		t.Fatalf("%d tensors, want %d", len(md.Tensors), len(wants))
	}
	f, err := os.Open(filepath.Join(dcpFixtures, "good", "__0_0.distcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tn := range md.Tensors {
		w, ok := wants[tn.FQN]
		if !ok || tn.Part != w.part || tn.DType != w.dtype || !slices.Equal(tn.Shape, w.shape) || len(tn.Chunks) != w.chunks {
			t.Errorf("%s: %v %v %v, %d chunks; want %+v", tn.FQN, tn.Part, tn.DType, tn.Shape, len(tn.Chunks), w)
		}
		if err := tn.Tiling(); err != nil {
			t.Errorf("%s: %v", tn.FQN, err)
		}
		// Each chunk's item is a torch.save archive of the chunk.
		for _, c := range tn.Chunks {
			item, err := NewFile(io.NewSectionReader(f, int64(c.Item.Offset), int64(c.Item.Length)), int64(c.Item.Length))
			if err != nil {
				t.Fatalf("%s chunk %v: %v", tn.FQN, c.Offsets, err)
			}
			if len(item.Tensors) != 1 || !slices.Equal(item.Tensors[0].Shape, c.Sizes) || item.Tensors[0].DType != tn.DType {
				t.Errorf("%s chunk %v: item holds %+v", tn.FQN, c.Offsets, item.Tensors)
			}
		}
	}
	// The second row chunk of model.w = arange(24).reshape(4, 6) starts at 12.
	c := md.Tensors[0].Chunks[1]
	item, _ := NewFile(io.NewSectionReader(f, int64(c.Item.Offset), int64(c.Item.Length)), int64(c.Item.Length))
	var first [4]byte
	if _, err := f.ReadAt(first[:], int64(c.Item.Offset)+item.Tensors[0].Offset); err != nil {
		t.Fatal(err)
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(first[:])); v != 12 {
		t.Errorf("model.w[2, 0] = %v, want 12", v)
	}
	if len(md.Bytes) != 1 || md.Bytes[0].FQN != "train_state" || md.Bytes[0].Part != DCPTrainState || md.Bytes[0].Item.Length == 0 {
		t.Errorf("bytes entries %+v; want train_state", md.Bytes)
	}
	if md.Version != "1.0.0" {
		t.Errorf("version %q", md.Version)
	}
}

func TestDCPTilingFixtures(t *testing.T) {
	for _, tc := range []struct {
		step string
		kind ErrorKind
		msg  string
	}{
		{"gap", DCPChunkGap, "elements [3:4, 0:6] of shape [0:4, 0:6] are in no chunk: the chunks cover 18 of 24 elements"},
		{"overlap", DCPChunkOverlap, "chunks [0:2, 0:6] and [1:4, 0:6] both hold elements [1:2, 0:6]"},
	} {
		md := readDCP(t, tc.step)
		err := md.Tensors[0].Tiling()
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Kind != tc.kind || fe.Tensor != "model.w" || fe.Msg != tc.msg {
			t.Errorf("%s: %v; want %s on model.w: %s", tc.step, err, tc.kind, tc.msg)
		}
	}
}

func chunk(off, size []uint64) DCPChunk { return DCPChunk{Offsets: off, Sizes: size} }

func TestDCPTiling(t *testing.T) {
	u := func(xs ...uint64) []uint64 { return xs }
	for _, tc := range []struct {
		name   string
		shape  []uint64
		chunks []DCPChunk
		kind   ErrorKind // 0: tiles exactly
		region string
	}{
		{"scalar", nil, []DCPChunk{chunk(nil, nil)}, 0, ""},
		{"scalar twice", nil, []DCPChunk{chunk(nil, nil), chunk(nil, nil)}, DCPChunkOverlap, ""},
		{"no chunks", u(3), nil, DCPChunkGap, "[0:3]"},
		{"empty tensor", u(0, 4), nil, 0, ""},
		{"columns", u(2, 4), []DCPChunk{chunk(u(0, 0), u(2, 2)), chunk(u(0, 2), u(2, 2))}, 0, ""},
		{"missing middle column", u(2, 6), []DCPChunk{chunk(u(0, 0), u(2, 2)), chunk(u(0, 4), u(2, 2))}, DCPChunkGap, "[0:2, 2:4]"},
		{"2x2 grid missing a corner", u(4, 4), []DCPChunk{chunk(u(0, 0), u(2, 2)), chunk(u(0, 2), u(2, 2)), chunk(u(2, 0), u(2, 2))}, DCPChunkGap, "[2:4, 2:4]"},
		{"same chunk twice", u(4), []DCPChunk{chunk(u(0), u(4)), chunk(u(0), u(4))}, DCPChunkOverlap, "[0:4]"},
		{"column overlap", u(2, 4), []DCPChunk{chunk(u(0, 0), u(2, 3)), chunk(u(0, 2), u(2, 2))}, DCPChunkOverlap, "[0:2, 2:3]"},
		{"empty chunk", u(4), []DCPChunk{chunk(u(0), u(4)), chunk(u(2), u(0))}, 0, ""},
	} {
		tn := &DCPTensor{FQN: "w", Shape: tc.shape, Chunks: tc.chunks}
		err := tn.Tiling()
		var fe *FormatError
		switch {
		case tc.kind == 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.kind != 0 && (!errors.As(err, &fe) || fe.Kind != tc.kind || !strings.Contains(fe.Msg, tc.region)):
			t.Errorf("%s: %v; want %s naming %s", tc.name, err, tc.kind, tc.region)
		}
	}
}

func TestDCPCheckPaths(t *testing.T) {
	for _, p := range []string{"../x.distcp", "/etc/passwd", `a\..\b`, "C:x", `\\host\share`} {
		md := &DCPMetadata{Tensors: []DCPTensor{{FQN: "w", Chunks: []DCPChunk{{Item: DCPItem{RelativePath: p}}}}}}
		var fe *FormatError
		if err := md.CheckPaths(checkpoint.UnsafePath); !errors.As(err, &fe) || fe.Kind != DCPBadMetadata || fe.Tensor != "w" {
			t.Errorf("%q: %v; want dcp_bad_metadata on w", p, err)
		}
	}
}

// hostile is a protocol 2 pickle calling module.name("x") where a
// Metadata would be.
func hostile(module, name string) []byte {
	return []byte("\x80\x02c" + module + "\n" + name + "\nX\x01\x00\x00\x00x\x85R.")
}

func TestReadDCPMetadataRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(dcpFixtures, "good", DCPMetadataName))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		kind   ErrorKind
		global string
	}{
		{"posix.system", hostile("posix", "system"), UnsafePickle, "posix.system"},
		{"builtins.eval", hostile("builtins", "eval"), UnsafePickle, "builtins.eval"},
		{"subprocess.Popen", hostile("subprocess", "Popen"), UnsafePickle, "subprocess.Popen"},
		// Allowed in a .bin, not in .metadata.
		{"a tensor rebuild", hostile("torch._utils", "_rebuild_tensor_v2"), UnsafePickle, "torch._utils._rebuild_tensor_v2"},
		{"truncated", good[:len(good)/2], BadPickle, ""},
		{"not Metadata", []byte("\x80\x05}."), DCPBadMetadata, ""},
	} {
		_, err := ReadDCPMetadata(tc.b)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Kind != tc.kind || fe.Global != tc.global || fe.Entry != DCPMetadataName {
			t.Errorf("%s: %v; want %s %s in %s", tc.name, err, tc.kind, tc.global, DCPMetadataName)
		}
	}
}

func FuzzReadDCPMetadata(f *testing.F) {
	for _, step := range []string{"good", "gap", "overlap"} {
		if b, err := os.ReadFile(filepath.Join(dcpFixtures, step, DCPMetadataName)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := ReadDCPMetadata(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for i := range md.Tensors {
			_ = md.Tensors[i].Tiling()
		}
		_ = md.CheckPaths(checkpoint.UnsafePath)
	})
}

func TestDCPTransformRefused(t *testing.T) {
	tn := &DCPTensor{FQN: "w", Shape: []uint64{2}, Chunks: []DCPChunk{{Offsets: []uint64{0}, Sizes: []uint64{2}, Item: DCPItem{RelativePath: "__0_0.distcp", Transforms: []string{"stream.zstd"}}}}}
	var fe *FormatError
	if err := tn.Transform(); !errors.As(err, &fe) || fe.Kind != DCPUnsupportedTransform || !strings.Contains(fe.Msg, "stream.zstd") {
		t.Errorf("%v; want dcp_unsupported_transform naming stream.zstd", err)
	}
	tn.Chunks[0].Item.Transforms = nil
	if err := tn.Transform(); err != nil {
		t.Error(err)
	}
}

// TestAssembleBounds: column shards make a piece a row a chunk; past the
// budget the tensor is not assembled, and why names the layout.
func TestAssembleBounds(t *testing.T) {
	tensor := &DCPTensor{FQN: "w", DType: tensorfile.F32, Shape: []uint64{4, 6}}
	var items []Tensor
	for c := range uint64(3) {
		item := DCPItem{RelativePath: "__0_0.distcp", Offset: 100 * c, Length: 100}
		tensor.Chunks = append(tensor.Chunks, DCPChunk{Offsets: []uint64{0, 2 * c}, Sizes: []uint64{4, 2}, Item: item})
		items = append(items, Tensor{TensorInfo: tensorfile.TensorInfo{DType: tensorfile.F32, Shape: []uint64{4, 2}, Offset: 10, Size: 32}})
	}
	budget := 100
	pieces, why := assemble(tensor, items, &budget)
	if why != "" || len(pieces) != 12 || budget != 88 {
		t.Fatalf("pieces %v, why %q, budget %d", pieces, why, budget)
	}
	// Row 1 is chunk 0's second row, then chunk 1's, then chunk 2's.
	if p := pieces[3]; p.Offset != 18 || p.Length != 8 {
		t.Errorf("row 1's first piece %+v, want bytes 18+8", p)
	}
	budget = 11
	if pieces, why = assemble(tensor, items, &budget); pieces != nil || !strings.Contains(why, "more than 11 pieces") || budget != 11 {
		t.Errorf("past the budget: %v, %q, budget %d", pieces, why, budget)
	}
}

// TestDCPModelFilesLaterChunks: a rank's file that holds only the second
// chunks of tensors is one of the step's files too, so that every piece
// is in one of them.
func TestDCPModelFilesLaterChunks(t *testing.T) {
	md := readDCP(t, "sharded")
	md.Tensors = slices.DeleteFunc(md.Tensors, func(t DCPTensor) bool { return t.FQN != "model.rows" })
	dir := filepath.Join(dcpFixtures, "sharded")
	names, files, err := DCPModelFiles(md, func(rel string) (io.ReaderAt, int64, error) {
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			return nil, 0, err
		}
		t.Cleanup(func() { f.Close() })
		st, err := f.Stat()
		return f, st.Size(), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"__0_0.distcp", "__1_0.distcp"}) || files["__0_0.distcp"].NumTensors() != 1 || files["__1_0.distcp"].NumTensors() != 0 {
		t.Fatalf("files %v", names)
	}
	ps := files["__0_0.distcp"].TensorPieces(0)
	if len(ps) != 2 || ps[0].File != "__0_0.distcp" || ps[1].File != "__1_0.distcp" || ps[0].Length != 48 || ps[1].Length != 48 {
		t.Errorf("pieces %+v: want the two row shards, 48 bytes each", ps)
	}
}

// FuzzDCPModelFiles: whatever .metadata and item bytes say, assembling
// the tensors neither panics nor makes a piece outside its item file.
func FuzzDCPModelFiles(f *testing.F) {
	items := map[string][]byte{}
	for _, step := range []string{"good", "sharded", "safetensors"} {
		md, err := os.ReadFile(filepath.Join(dcpFixtures, step, DCPMetadataName))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range []string{"__0_0.distcp", "__1_0.distcp"} {
			if b, err := os.ReadFile(filepath.Join(dcpFixtures, step, name)); err == nil && items[name] == nil {
				items[name] = b
			}
		}
		own, err := os.ReadFile(filepath.Join(dcpFixtures, step, "__0_0.distcp"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(md, own) // the safetensors step's rank 1 file is the sharded step's: its chunks there do not read
	}
	f.Fuzz(func(t *testing.T, meta, item0 []byte) {
		md, err := ReadDCPMetadata(meta)
		if err != nil {
			return
		}
		files := map[string][]byte{"__0_0.distcp": item0, "__1_0.distcp": items["__1_0.distcp"]}
		_, dcp, err := DCPModelFiles(md, func(rel string) (io.ReaderAt, int64, error) {
			b, ok := files[rel]
			if !ok {
				return nil, 0, os.ErrNotExist
			}
			return bytes.NewReader(b), int64(len(b)), nil
		})
		if err != nil {
			return
		}
		for _, df := range dcp {
			for i := range df.NumTensors() {
				for _, p := range df.TensorPieces(i) {
					if n := uint64(len(files[p.File])); p.Offset > n || p.Length > n-p.Offset {
						t.Fatalf("tensor %s: piece %+v outside its file's %d bytes", df.Tensors[i].Name, p, n)
					}
				}
			}
		}
	})
}

// TestDCPParts: a trainer's state is told from the model's by the first
// component of its planner_data path, else of its FQN.
func TestDCPParts(t *testing.T) {
	for _, tc := range []struct {
		fqn  string
		path []string
		want DCPPart
	}{
		{"model.layers.0.attention.wq.weight", nil, DCPModel},
		{"tok_embeddings.weight", nil, DCPModel},
		{"optimizer.state.tok_embeddings.weight.exp_avg", nil, DCPOptimizer},
		{"optim.state.0.exp_avg", nil, DCPOptimizer},
		{"lr_scheduler.lr_scheduler_0", nil, DCPLRScheduler},
		{"scheduler.last_epoch", nil, DCPLRScheduler},
		{"dataloader.dp_rank_0", nil, DCPDataloader},
		{"train_state", nil, DCPTrainState},
		// planner_data decides over the FQN's own dots.
		{"optimizer.state.w", []string{"model", "optimizer.state.w"}, DCPModel},
		{"w", []string{"optimizer", "state", "w"}, DCPOptimizer},
	} {
		if got := partOf(firstComponent(tc.fqn, tc.path)); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.fqn, tc.path, got, tc.want)
		}
	}
}

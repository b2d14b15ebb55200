package checkpoint

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestUnsafeNameOtherFormats: once another format is registered (.bin
// here, through a stand-in for the registry), its files are accepted as
// index entries, and the path rules still refuse the same names, on every
// OS.
func TestUnsafeNameOtherFormats(t *testing.T) {
	isTensor := func(n string) bool { return strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".bin") }
	exts := func() []string { return []string{".bin", ".safetensors"} }
	tests := map[string]string{
		"pytorch_model-00001-of-00002.bin": "",
		"sub/model.bin":                    "",
		"model.safetensors":                "",
		"/etc/model.bin":                   "is an absolute path",
		`\model.bin`:                       "is an absolute path",
		`\\server\share\model.bin`:         "is an absolute path",
		"C:model.bin":                      "is an absolute path",
		`D:\model.bin`:                     "is an absolute path",
		"../model.bin":                     "leaves the checkpoint directory",
		`a\..\..\model.bin`:                "leaves the checkpoint directory",
		"a\x00.bin":                        "contains a NUL byte",
		"model.pt":                         "is not a .bin or .safetensors file",
	}
	for name, want := range tests {
		if got := unsafeName(name, isTensor, exts); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}

func TestHFIndexNames(t *testing.T) {
	names := []string{
		"config.json",
		"model.safetensors.index.json",
		"model.safetensors.index.fp16.json",
		"diffusion_pytorch_model.safetensors.index.bf16.json",
		"consolidated.safetensors.index.json",
		"model.msgpack.index.json", // no registered format claims .msgpack
		"weights.index.json",       // an index only when given as the path
		"model.fp16-00001-of-00002.safetensors",
	}
	byVariant, others := HFIndex.Indexes(names)
	want := map[string]string{
		"":     "model.safetensors.index.json",
		"fp16": "model.safetensors.index.fp16.json",
		"bf16": "diffusion_pytorch_model.safetensors.index.bf16.json",
	}
	if !maps.Equal(byVariant, want) || !slices.Equal(others, []string{"consolidated.safetensors.index.json"}) {
		t.Errorf("Indexes = %v, %v", byVariant, others)
	}
	for name, want := range map[string]bool{"weights.index.json": true, "model.safetensors.index.json": true, "model.safetensors.index.fp16.json": false, "model.safetensors": false} {
		if got := IsIndex(name); got != want {
			t.Errorf("IsIndex(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]string{
		"model.safetensors":                        "",
		"model.fp16.safetensors":                   "fp16",
		"model.fp16-00001-of-00002.safetensors":    "fp16",
		"model-00001-of-00002.safetensors":         "",
		"diffusion_pytorch_model.bf16.safetensors": "bf16",
		"model.fp16.msgpack":                       "",
		"pytorch_model.fp16.bin":                   "fp16",
	} {
		if got := shardVariant(name); got != want {
			t.Errorf("shardVariant(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestShardStatusString(t *testing.T) {
	for s, want := range map[ShardStatus]string{ShardOK: "ok", ShardMissing: "missing", ShardDangling: "dangling", ShardUnsafe: "unsafe", ShardInvalid: "invalid", ShardTrailing: "trailing", 99: "ShardStatus(99)"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s, want)
		}
	}
}

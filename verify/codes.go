package verify

import (
	"slices"

	"github.com/ckptcheck/ckptcheck/gguf"
	"github.com/ckptcheck/ckptcheck/safetensors"
)

// A Code names a kind of finding. Codes are stable: pipelines match on them.
type Code string

// Finding codes. The first ten are the reference implementation's error
// kinds, the names of safetensors.ErrorKind (see FormatCode); the rest are
// ckptcheck's own.
const (
	CodeHeaderTooSmall               Code = "header_too_small"
	CodeHeaderTooLarge               Code = "header_too_large"
	CodeInvalidHeaderLength          Code = "invalid_header_length"
	CodeInvalidHeader                Code = "invalid_header"
	CodeInvalidHeaderDeserialization Code = "invalid_header_deserialization"
	CodeInvalidOffset                Code = "invalid_offset"
	CodeValidationOverflow           Code = "validation_overflow"
	CodeMisalignedSlice              Code = "misaligned_slice"
	CodeTensorInvalidInfo            Code = "tensor_invalid_info"
	CodeMetadataIncompleteBuffer     Code = "metadata_incomplete_buffer"

	CodeShardUnreadable          Code = "shard_unreadable"
	CodeShardMissing             Code = "shard_missing"
	CodeIndexInvalid             Code = "index_invalid"
	CodeIndexUnsafePath          Code = "index_unsafe_path"
	CodeIndexMissingShard        Code = "index_missing_shard"
	CodeIndexKeyNotInShard       Code = "index_key_not_in_shard"
	CodeShardKeyNotInIndex       Code = "shard_key_not_in_index"
	CodeDuplicateKeyAcrossShards Code = "duplicate_key_across_shards"
	CodeDuplicateKey             Code = "duplicate_key"
	CodeUnalignedData            Code = "unaligned_data"
	CodeIndexTotalSizeMismatch   Code = "index_total_size_mismatch"
	CodeUnreferencedShard        Code = "unreferenced_shard"
	CodeNotListable              Code = "not_listable"
	CodeEmptyCheckpoint          Code = "empty_checkpoint"
	CodeShardOfIndex             Code = "shard_of_index"
	CodeVariants                 Code = "variants"
	CodeSupersededWeights        Code = "superseded_weights"
	CodeConfigInvalid            Code = "config_invalid"
	CodeConfigMismatch           Code = "config_mismatch"

	CodeMissingKey       Code = "missing_key"
	CodeUnexpectedKey    Code = "unexpected_key"
	CodeNotCompared      Code = "not_compared"
	CodeShapeMismatch    Code = "shape_mismatch"
	CodeDTypeMismatch    Code = "dtype_mismatch"
	CodeTiedWeight       Code = "tied_weight"
	CodeAdapterCollision Code = "adapter_collision"
	CodeLowKeyOverlap    Code = "low_key_overlap"
	CodeAdapterDropped   Code = "adapter_dropped"
	CodeAdapterAbsent    Code = "adapter_absent"
	CodeAdapterError     Code = "adapter_error"
	CodeAdapterLimit     Code = "adapter_limit"
	CodeNeedsAdapter     Code = "needs_adapter"
	CodeInferAmbiguous   Code = "inference_ambiguous"
	CodeInferConflict    Code = "inference_conflict"
	CodeLoRAAdapter      Code = "lora_adapter"
	CodeAdapterBeside    Code = "adapter_beside"

	CodeLoRATargetMissing Code = "lora_target_missing"
	CodeLoRAShapeMismatch Code = "lora_shape_mismatch"
	CodeLoRARankMismatch  Code = "lora_rank_mismatch"
	CodeLoRATargetEmpty   Code = "lora_target_empty"
	CodeLoRAUntrained     Code = "lora_untrained"
	CodeLoRANotMerged     Code = "lora_not_merged"
	CodeLoRAMergeMismatch Code = "lora_merge_mismatch"
	CodeLoRAMergeExtra    Code = "lora_merge_extra"
	CodeLoRAUnverifiable  Code = "lora_unverifiable"

	CodeQuantizedUnsupported  Code = "quantized_unsupported"
	CodeQuantizedScaleMissing Code = "quantized_scale_missing"
	CodeQuantizedScaleShape   Code = "quantized_scale_shape"
	CodeQuantizedScaleUnused  Code = "quantized_scale_unused"
	CodeQuantizedConfig       Code = "quantized_config_mismatch"

	CodeValueMismatch        Code = "value_mismatch"
	CodeQuantizationError    Code = "quantization_error"
	CodeQuantizedScaleFolded Code = "quantized_scale_folded"
	CodeNonFinite            Code = "nonfinite"
	CodeReinitialized        Code = "reinitialized"
	CodeTiedWeightMismatch   Code = "tied_weight_mismatch"
	CodeUnchanged            Code = "unchanged"
	CodeDriftExcessive       Code = "drift_excessive"
	CodeNotTrained           Code = "not_trained"

	CodeWeightsOnlyExport Code = "weights_only_export"
	CodeMissingFile       Code = "missing_file"
	CodeConfigChanged     Code = "config_changed"
	CodeTokenizerChanged  Code = "tokenizer_changed"

	CodeManifestMismatch     Code = "manifest_mismatch"
	CodeManifestMissing      Code = "manifest_missing"
	CodeManifestExtra        Code = "manifest_extra"
	CodeManifestShardsDiffer Code = "manifest_shards_differ"
	CodeHashMismatch         Code = "hash_mismatch"

	CodePartitionMissing   Code = "partition_missing"
	CodePartitionDuplicate Code = "partition_duplicate"

	CodeUnsafePickle           Code = "unsafe_pickle"
	CodeTorchBadArchive        Code = "torch_bad_archive"
	CodeTorchBadPickle         Code = "torch_bad_pickle"
	CodeTorchCompressedStorage Code = "torch_compressed_storage"
	CodeTorchBigEndian         Code = "torch_big_endian"
	CodeTorchStorageOutOfRange Code = "torch_storage_out_of_range"
	CodeTorchNonContiguous     Code = "torch_noncontiguous"
	CodeTorchUnsupportedTensor Code = "torch_unsupported_tensor"
	// The DCP reader's error kinds (torchsave.DCP*).
	CodeDCPBadMetadata          Code = "dcp_bad_metadata"
	CodeDCPChunkGap             Code = "dcp_chunk_gap"
	CodeDCPChunkOverlap         Code = "dcp_chunk_overlap"
	CodeDCPUnsupportedTransform Code = "dcp_unsupported_transform"
	CodeDCPChunked              Code = "dcp_chunked"
	// The GGUF reader's error kinds, the names of gguf.ErrorKind (see
	// GGUFFormatCode).
	CodeGGUFTruncated     Code = "gguf_truncated"
	CodeGGUFBadMagic      Code = "gguf_bad_magic"
	CodeGGUFBadVersion    Code = "gguf_bad_version"
	CodeGGUFTooLarge      Code = "gguf_too_large"
	CodeGGUFBadType       Code = "gguf_bad_type"
	CodeGGUFBadOffset     Code = "gguf_bad_offset"
	CodeGGUFTensorPastEnd Code = "gguf_tensor_past_end"
	CodeGGUFBadSize       Code = "gguf_bad_size"
	CodeGGUFDuplicate     Code = "gguf_duplicate"
	CodeGGUFBadAlignment  Code = "gguf_bad_alignment"
	CodeGGUFBadName       Code = "gguf_bad_name"

	CodeGGUFMetadataMismatch Code = "gguf_metadata_mismatch"
	CodeGGUFConfigMismatch   Code = "gguf_config_mismatch"
	CodeGGUFSplitMissing     Code = "gguf_split_missing"
)

// FormatCode is the code of a format error kind: its snake_case name.
func FormatCode(k safetensors.ErrorKind) Code { return Code(k.String()) }

// GGUFFormatCode is the code of a GGUF format error kind: its name.
func GGUFFormatCode(k gguf.ErrorKind) Code { return Code(k.String()) }

// A CodeDoc documents one finding code.
type CodeDoc struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Doc      string   `json:"doc"`
}

var codes = []CodeDoc{
	{CodeHeaderTooSmall, Error, "file shorter than the 8-byte header length"},
	{CodeHeaderTooLarge, Error, "header length above 100,000,000 bytes (or a Git LFS pointer in place of the file)"},
	{CodeInvalidHeaderLength, Error, "8 + header length runs past the end of the file"},
	{CodeInvalidHeader, Error, "header is not valid UTF-8"},
	{CodeInvalidHeaderDeserialization, Error, "header is not strict JSON of the safetensors shape (syntax, unknown dtype, missing or bad field, ...)"},
	{CodeInvalidOffset, Error, "tensor data_offsets leave a gap, overlap, or end before they begin"},
	{CodeValidationOverflow, Error, "shape product times dtype bits overflows 64 bits"},
	{CodeMisalignedSlice, Error, "tensor of a sub-byte dtype does not fill whole bytes"},
	{CodeTensorInvalidInfo, Error, "data_offsets span differs from shape x dtype size"},
	{CodeMetadataIncompleteBuffer, Error, "tensors do not end where the file ends (truncated file or trailing bytes)"},
	{CodeShardUnreadable, Error, "a shard's bytes could not be read during the run (I/O error)"},
	{CodeShardMissing, Error, "a *.safetensors entry in the directory is a symlink that points at nothing (in a hub cache: an interrupted download)"},
	{CodeIndexInvalid, Error, "index.json is not JSON, has no weight_map, or maps to non-strings"},
	{CodeIndexUnsafePath, Error, "index names a shard that is absolute (`/`, `\\`, a drive letter, a UNC path), leaves the directory, holds a backslash or a NUL byte, or is not a tensor file of the index's format (never opened); DCP's `relative_path` follows the same rules"},
	{CodeIndexMissingShard, Error, "index names a shard that does not exist"},
	{CodeIndexKeyNotInShard, Error, "index maps a tensor to a shard whose header lacks it"},
	{CodeShardKeyNotInIndex, Error, "a shard holds a tensor the index does not map to it"},
	{CodeDuplicateKeyAcrossShards, Error, "the same tensor name is stored in more than one shard"},
	{CodeDuplicateKey, Warning, "a tensor name appears twice in one header; the reference silently keeps the last"},
	{CodeUnalignedData, Warning, "header length not a multiple of 8, or a tensor not aligned to its element size"},
	{CodeIndexTotalSizeMismatch, Warning, "index metadata.total_size differs from the sum of tensor bytes"},
	{CodeUnreferencedShard, Warning, "a tensor file (.safetensors, pytorch_model*.bin) beside the index that the index does not name"},
	{CodeNotListable, Info, "the source cannot list its files (an http(s):// URL): .safetensors files beside the index that it does not name were not looked for"},
	{CodeEmptyCheckpoint, Warning, "the checkpoint holds no tensors"},
	{CodeShardOfIndex, Info, "a single file was checked that an index beside it names: one shard of a larger checkpoint"},
	{CodeVariants, Info, "the directory holds several variants (model.safetensors, model.fp16.safetensors): each is its own checkpoint"},
	{CodeConfigInvalid, Warning, "config.json is not a JSON object, or a field has the wrong type"},
	{CodeConfigMismatch, Warning, "config.json disagrees with the tensors (vocab/hidden size, layer count, dtype: an F32 export whose config says bfloat16 is twice the size it claims)"},
	{CodeMissingKey, Error, "diff: a published tensor has no counterpart in the export (after adapters)"},
	{CodeUnexpectedKey, Error, "diff: an exported tensor has no counterpart in the published checkpoint"},
	{CodeNotCompared, Warning, "diff: tensors of a side whose shards could not be read or failed validation; not judged missing or unexpected"},
	{CodeShapeMismatch, Error, "diff: the two sides' shapes differ (says so when one is the other transposed)"},
	{CodeDTypeMismatch, Warning, "diff: the dtypes differ; an error for exported tensors that break --dtype"},
	{CodeTiedWeight, Info, "diff: lm_head.weight absent on one side but tied to the embedding (a warning when only assumed)"},
	{CodeAdapterCollision, Error, "diff: the adapter maps two physical tensors to one name"},
	{CodeAdapterDropped, Warning, "diff: the adapter drops a tensor with no Hugging Face counterpart (e.g. torchtitan's expert_bias), with its reason"},
	{CodeAdapterAbsent, Warning, "diff: tensors of one side that the other side's adapter says it holds in no form it reads (a vision tower converted to a separate mmproj file, llama.cpp's per-head split of DeepSeek's kv_b_proj in a GGML block type): not compared, not judged missing; one finding an absent line of the adapter, with the keys and its reason"},
	{CodeAdapterError, Error, "diff: an adapter rule matched a tensor it cannot map (shape or config does not fit): a stale mapping"},
	{CodeAdapterLimit, Error, "diff: the adapter would make far more tensors than the published checkpoint has; mapping stopped"},
	{CodeLowKeyOverlap, Warning, "diff: fewer than half of the published keys are in the export; the adapter is probably wrong"},
	{CodeNeedsAdapter, Warning, "diff: the export matches only through an adapter other than hf: its names are not Hugging Face's and transformers will not load it as is; says which adapter mapped how many tensors"},
	{CodeInferAmbiguous, Warning, "diff: an inferred adapter left name templates between candidates of equal shape (their tensors stay unexpected_key); says which, and whether values would settle them (--adapter exported=infer) or cannot"},
	{CodeInferConflict, Error, "diff: an inferred adapter's best fit (by shapes or sampled values) contradicts the names or the layout of the tensors' siblings: k and v or gate and up swapped in every layer, a fused QKV in another order, a bias split unlike its weight, a square matrix not transposed like the rest of its layer; the mapping the names say is taken (so --values fails on it), or the template is left unmapped"},
	{CodeLoRAAdapter, Error, "diff: a side is a LoRA adapter (peft, torchtune or mlx-lm layout), not a model: merge it into its base before diffing"},
	{CodeAdapterBeside, Info, "diff: a side holds a full model with a PEFT adapter beside it (torchtune's epoch_N of a LoRA run): the model is compared, the adapter named"},
	{CodeLoRATargetMissing, Error, "validate --base, diff BASE ADAPTER, diff --lora: an adapter's target (or modules_to_save copy) that the base does not have"},
	{CodeLoRAShapeMismatch, Error, "validate --base, diff BASE ADAPTER, diff --lora: lora_A [r, in] and lora_B [out, r] do not fit the base weight [out, in], or a half of the pair is missing"},
	{CodeLoRARankMismatch, Error, "validate --base, diff BASE ADAPTER, diff --lora: a target's rank disagrees with adapter_config.json's r or rank_pattern"},
	{CodeLoRATargetEmpty, Warning, "validate --base, diff BASE ADAPTER, diff --lora: target_modules lists a module the adapter holds no weights for"},
	{CodeLoRAUntrained, Warning, "validate --base, diff BASE ADAPTER, diff --lora: a target's lora_B is all zero, as peft initializes it: the adapter never trained"},
	{CodeLoRANotMerged, Error, "diff --lora: a target of the merged export holds the base's values: the adapter was never merged into it"},
	{CodeLoRAMergeMismatch, Error, "diff --lora: a target is neither the base nor base + scale·B·A (gives the measured scale ratio when it is a wrong scale, e.g. alpha instead of alpha/r), or a modules_to_save module is not the adapter's copy"},
	{CodeLoRAMergeExtra, Error, "diff --lora: a tensor the adapter neither targets nor saves differs from the base"},
	{CodeLoRAUnverifiable, Warning, "diff --lora: a target's delta is below what the merged dtype's rounding can show, so the merge cannot be told from the base (or a use_dora target without its magnitude)"},
	{CodeQuantizedUnsupported, Warning, "diff: quantized weights (each bound to its scales, zero points, blocks by its scheme: FP8, MXFP4, compressed-tensors, bitsandbytes, GPTQ, AWQ, MLX) held in another encoding by the other side are not compared yet, said once; a quantized weight the other side lacks stays a missing_key"},
	{CodeQuantizedScaleMissing, Error, "validate, diff: a quantized weight lacks a companion its scheme needs (a scale; zero points of an asymmetric scheme); keyed by the weight"},
	{CodeQuantizedScaleShape, Error, "validate, diff: a companion's shape does not fit its weight and scheme (e.g. the last partial block row dropped), or the layout a weight keeps in its data (compressed-tensors' weight_shape, bitsandbytes' quant_state) cannot be read or disagrees with the headers; keyed by the weight"},
	{CodeQuantizedScaleUnused, Warning, "validate, diff: a scale, zero point or block tensor that no quantized weight claims"},
	{CodeQuantizedConfig, Warning, "validate, diff: quantization_config disagrees with the tensors: an ignored module quantized anyway, a Linear weight left unquantized though no rule excludes it, a block size the scales contradict"},
	{CodeQuantizationError, Error, "diff --values: a quantized weight decodes outside its encoding's own bound against the other side (half a step a value for round-to-nearest schemes, relative L2 ≤ 3·√(Σ step²/12)/‖p‖ for GPTQ/AWQ): a wrong scale, zero point or weight; gives the measured numbers and the bound"},
	{CodeQuantizedScaleFolded, Info, "diff --values: a quantized weight differs from the published one by a factor per input column whose reciprocal the norm or the Linear before it holds, or per output row whose reciprocal the Linear after it holds (AWQ/SmoothQuant fold activation scales so); both are judged with the scale taken out, not failed; gives the factors' range and the residual"},
	{CodeValueMismatch, Error, "diff --values: elements differ beyond the policy (exact by default); gives the count and the worst element"},
	{CodeNonFinite, Error, "diff --values: NaN or Inf in an exported tensor where the published one is finite"},
	{CodeReinitialized, Error, "diff --values: cosine < 0.5 and relative L2 > 0.5: values unrelated to the published ones (random init, wrong file)"},
	{CodeTiedWeightMismatch, Error, "diff --values: a tied lm_head.weight differs from its side's embedding"},
	{CodeUnchanged, Info, "diff --values with a tolerance or --expect derived: tensors bit-identical to the published ones (frozen, or never trained?)"},
	{CodeDriftExcessive, Error, "diff --values --expect derived: a tensor related to the published one but changed more than training does (relative L2 above max_rel_l2, 0.25 by default, or cosine below min_cosine, 0.95); gives both numbers and the bound"},
	{CodeNotTrained, Warning, "diff --values --expect derived: every compared tensor holds the published values: a copy, not a model trained from them"},
	{CodeWeightsOnlyExport, Info, "diff: the export has no config or tokenizer files (normal mid-pipeline); lists what to copy from the published side before upload"},
	{CodeMissingFile, Warning, "diff: a config, tokenizer, generation or chat-template file the published side has is missing from the export (an error with --require-files)"},
	{CodeConfigChanged, Warning, "diff: a config.json field differs, after normalising transformers v5 names; a warning for architecture and numerics fields, info for the rest"},
	{CodeTokenizerChanged, Warning, "diff: tokenizer files, the chat template, or the eos/bos/pad token ids differ from the published ones; for a GGUF export, its embedded vocabulary size, special token ids or chat template"},
	{CodeManifestMismatch, Error, "validate --manifest: a tensor's dtype, shape or bytes (xxh3), or a file's bytes (SHA-256), differ from the manifest"},
	{CodeManifestMissing, Error, "validate --manifest: a tensor or file the manifest lists is not in the checkpoint"},
	{CodeManifestExtra, Error, "validate --manifest: a tensor or file the manifest does not list"},
	{CodeManifestShardsDiffer, Info, "validate --manifest: every tensor matches, but the shard files differ (re-sharded or re-written)"},
	{CodeHashMismatch, Error, "validate --hashes: a file's bytes do not hash to the digest its source names it by (hub cache: SHA-256 for LFS blobs, git blob SHA-1 for the rest)"},
	{CodePartitionMissing, Error, "merge: a partition's report was not given; its tensors (and for partition 0 the structural findings) are not in the merged report"},
	{CodePartitionDuplicate, Error, "merge: a partition's report was given more than once; the first was merged"},
	{CodeSupersededWeights, Info, "the directory holds safetensors weights and another format's (pytorch_model.bin): as transformers does, the safetensors ones were checked and the others not read"},
	{CodeUnsafePickle, Error, "a .bin/.pt/.pth pickle names a global torch's weights_only unpickler refuses (posix.system, builtins.eval) or an opcode that runs code: names the global and the file, which is not read further; nothing is ever run"},
	{CodeTorchBadArchive, Error, "a torch file is no torch.save zip archive (no data.pkl, entries outside the record folder, a broken directory, a storage entry missing)"},
	{CodeTorchBadPickle, Error, "a torch file's pickle is not the pickle of tensors torch.save writes (truncated, a malformed storage reference)"},
	{CodeTorchCompressedStorage, Error, "a torch archive's storage entry is compressed; torch.save stores them uncompressed"},
	{CodeTorchBigEndian, Error, "a torch file was written big-endian; only little-endian files are read"},
	{CodeTorchStorageOutOfRange, Error, "a torch tensor's view reaches past its storage, or a storage past its entry or the file"},
	{CodeTorchNonContiguous, Warning, "a torch tensor is a strided view ckptcheck does not read (an expand reading its storage more than 64 times over, or more than 2^20 byte pieces a tensor or 2^22 a file): listed and compared by name, shape and dtype, its values not read"},
	{CodeTorchUnsupportedTensor, Warning, "a torch tensor of a kind not read (sparse, quantized, complex128 storage): listed, its values not read"},
	{CodeDCPBadMetadata, Error, "a DCP step directory's .metadata is not the Metadata torch.distributed.checkpoint writes (a chunk outside its tensor or with no storage item, a relative_path that leaves the directory)"},
	{CodeDCPChunkGap, Error, "a DCP tensor's chunks leave part of it uncovered (a tensor-parallel shard missing its tail): names the tensor and the region"},
	{CodeDCPChunkOverlap, Error, "two chunks of a DCP tensor hold the same elements: names the tensor, the chunks and the region they share"},
	{CodeDCPUnsupportedTransform, Error, "a DCP item records a transform (transform_descriptors, e.g. a compression) that is not implemented: names it; the item is not read"},
	{CodeDCPChunked, Warning, "diff: a DCP tensor whose chunks are not assembled (they do not tile it, are stored with a transform, or would take more than 2^20 byte pieces a tensor or 2^22 a step, as narrow column shards can) is compared by name, shape and dtype, its values not read; the message says which"},
	{CodeGGUFTruncated, Error, "GGUF: the file ends inside its header (metadata or tensor infos)"},
	{CodeGGUFBadMagic, Error, "GGUF: a .gguf file that does not start with the magic GGUF"},
	{CodeGGUFBadVersion, Error, "GGUF: a version other than 3 or 2, or a big-endian file"},
	{CodeGGUFTooLarge, Error, "GGUF: a count or string length larger than the file could hold (checked before anything is allocated), or a header above 512 MiB"},
	{CodeGGUFBadType, Error, "GGUF: an unknown metadata value type or GGML tensor type"},
	{CodeGGUFBadOffset, Error, "GGUF: a tensor offset that is not the running sum of the sizes before it, each padded to the alignment, as ggml requires"},
	{CodeGGUFTensorPastEnd, Error, "GGUF: a tensor's bytes run past the end of the file (truncated download)"},
	{CodeGGUFBadSize, Error, "GGUF: rows that are not whole blocks of the tensor's type, more than 4 dimensions, or an element count that overflows"},
	{CodeGGUFDuplicate, Error, "GGUF: a metadata key or a tensor name given twice"},
	{CodeGGUFBadAlignment, Error, "GGUF: general.alignment is not a u32 power of two (up to 1 MiB)"},
	{CodeGGUFBadName, Error, "GGUF: a tensor name of 64 bytes or more, which ggml refuses"},
	{CodeGGUFMetadataMismatch, Error, "GGUF: the metadata disagrees with the tensors: <arch>.block_count against the blk.N layers present, embedding_length against token_embd, head counts and key/value lengths against attn_q/attn_k/attn_v rows (llama, mistral, qwen2, qwen3, qwen3moe, gemma2, gemma3), expert_count against the experts each MoE layer stacks (ffn_*_exps, the router ffn_gate_inp) and expert_used_count against expert_count"},
	{CodeGGUFSplitMissing, Error, "GGUF: split files (gguf-split's model-00001-of-00003.gguf) that are not one whole set: a split.no of split.count absent, given twice or out of range, split.count differing between the files, or split.tensors.count not the tensors they hold"},
	{CodeGGUFConfigMismatch, Error, "diff: a GGUF export's metadata disagrees with the published config.json, with both values, keyed by the config field: an error for <arch>.block_count, embedding_length, attention.head_count and head_count_kv (llama.cpp builds another model; MLA written as MQA and NextN layers counted as blocks are the converter's and pass), a warning for feed_forward_length, context_length, rope.freq_base, attention.layer_norm_rms_epsilon and the vocabulary size (<arch>.vocab_size or tokenizer.ggml.tokens)"},
}

// Codes lists every finding code with its usual severity and a line of
// documentation, in the order `ckptcheck codes` prints them. The slice is
// a copy: callers may change it.
func Codes() []CodeDoc { return slices.Clone(codes) }

// DocOf returns a code's documentation.
func DocOf(c Code) (CodeDoc, bool) {
	i := slices.IndexFunc(codes, func(d CodeDoc) bool { return d.Code == c })
	if i < 0 {
		return CodeDoc{}, false
	}
	return codes[i], true
}

package verify

import "github.com/ckptcheck/ckptcheck/safetensors"

// Finding codes. The reference implementation's error kinds are the codes of
// safetensors.ErrorKind; the rest are ckptcheck's own. Codes are stable:
// pipelines match on them.
const (
	CodeShardUnreadable          = "shard_unreadable"
	CodeDuplicateKey             = "duplicate_key"
	CodeUnalignedData            = "unaligned_data"
	CodeIndexKeyNotInShard       = "index_key_not_in_shard"
	CodeShardKeyNotInIndex       = "shard_key_not_in_index"
	CodeDuplicateKeyAcrossShards = "duplicate_key_across_shards"
	CodeIndexTotalSizeMismatch   = "index_total_size_mismatch"
	CodeUnreferencedShard        = "unreferenced_shard"
	CodeConfigInvalid            = "config_invalid"
	CodeConfigMismatch           = "config_mismatch"

	CodeMissingKey       = "missing_key"
	CodeUnexpectedKey    = "unexpected_key"
	CodeShapeMismatch    = "shape_mismatch"
	CodeDTypeMismatch    = "dtype_mismatch"
	CodeTiedWeight       = "tied_weight"
	CodeAdapterCollision = "adapter_collision"
	CodeLowKeyOverlap    = "low_key_overlap"
	CodeAdapterDropped   = "adapter_dropped"
	CodeAdapterError     = "adapter_error"

	CodeValueMismatch      = "value_mismatch"
	CodeNonFinite          = "nonfinite"
	CodeReinitialized      = "reinitialized"
	CodeTiedWeightMismatch = "tied_weight_mismatch"
	CodeUnchanged          = "unchanged"
)

// A CodeDoc documents one finding code.
type CodeDoc struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Doc      string   `json:"doc"`
}

// Codes lists every finding code with its usual severity and a line of
// documentation, in the order `ckptcheck codes` prints them.
var Codes = []CodeDoc{
	{safetensors.HeaderTooSmall.String(), Error, "file shorter than the 8-byte header length"},
	{safetensors.HeaderTooLarge.String(), Error, "header length above 100,000,000 bytes (or a Git LFS pointer in place of the file)"},
	{safetensors.InvalidHeaderLength.String(), Error, "8 + header length runs past the end of the file"},
	{safetensors.InvalidHeader.String(), Error, "header is not valid UTF-8"},
	{safetensors.InvalidHeaderDeserialization.String(), Error, "header is not strict JSON of the safetensors shape (syntax, unknown dtype, missing or bad field, ...)"},
	{safetensors.InvalidOffset.String(), Error, "tensor data_offsets leave a gap, overlap, or end before they begin"},
	{safetensors.ValidationOverflow.String(), Error, "shape product times dtype bits overflows 64 bits"},
	{safetensors.MisalignedSlice.String(), Error, "tensor of a sub-byte dtype does not fill whole bytes"},
	{safetensors.TensorInvalidInfo.String(), Error, "data_offsets span differs from shape x dtype size"},
	{safetensors.MetadataIncompleteBuffer.String(), Error, "tensors do not end where the file ends (truncated file or trailing bytes)"},
	{CodeShardUnreadable, Error, "a shard could not be read (permissions, I/O error)"},
	{safetensors.IndexInvalid.String(), Error, "index.json is not JSON, has no weight_map, or maps to non-strings"},
	{safetensors.IndexUnsafePath.String(), Error, "index names a shard that is absolute, leaves the directory, or is not .safetensors (never opened)"},
	{safetensors.IndexMissingShard.String(), Error, "index names a shard that does not exist"},
	{CodeIndexKeyNotInShard, Error, "index maps a tensor to a shard whose header lacks it"},
	{CodeShardKeyNotInIndex, Error, "a shard holds a tensor the index does not map to it"},
	{CodeDuplicateKeyAcrossShards, Error, "the same tensor name is stored in more than one shard"},
	{CodeDuplicateKey, Warning, "a tensor name appears twice in one header; the reference silently keeps the last"},
	{CodeUnalignedData, Warning, "header length not a multiple of 8, or a tensor not aligned to its element size"},
	{CodeIndexTotalSizeMismatch, Warning, "index metadata.total_size differs from the sum of tensor bytes"},
	{CodeUnreferencedShard, Warning, "a .safetensors file beside the index that the index does not name"},
	{CodeConfigInvalid, Warning, "config.json exists but is not a JSON object"},
	{CodeConfigMismatch, Warning, "config.json disagrees with the tensors (vocab/hidden size, layer count, dtype)"},
	{CodeMissingKey, Error, "diff: a published tensor has no counterpart in the export (after adapters)"},
	{CodeUnexpectedKey, Error, "diff: an exported tensor has no counterpart in the published checkpoint"},
	{CodeShapeMismatch, Error, "diff: the two sides' shapes differ (says so when one is the other transposed)"},
	{CodeDTypeMismatch, Warning, "diff: the dtypes differ; an error for exported tensors that break --dtype"},
	{CodeTiedWeight, Info, "diff: lm_head.weight absent on one side but tied to the embedding (a warning when only assumed)"},
	{CodeAdapterCollision, Error, "diff: the adapter maps two physical tensors to one name"},
	{CodeValueMismatch, Error, "diff --values: elements differ beyond the policy (exact by default); gives the count and the worst element"},
	{CodeNonFinite, Error, "diff --values: NaN or Inf in an exported tensor where the published one is finite"},
	{CodeReinitialized, Error, "diff --values: cosine < 0.5 and relative L2 > 0.5: values unrelated to the published ones (random init, wrong file)"},
	{CodeTiedWeightMismatch, Error, "diff --values: a tied lm_head.weight differs from its side's embedding"},
	{CodeUnchanged, Info, "diff --values with a tolerance: tensors bit-identical to the published ones (frozen, or never trained?)"},
	{CodeAdapterDropped, Warning, "diff: the adapter drops a tensor with no Hugging Face counterpart (e.g. torchtitan's expert_bias), with its reason"},
	{CodeAdapterError, Error, "diff: an adapter rule matched a tensor it cannot map (shape or config does not fit): a stale mapping"},
	{CodeLowKeyOverlap, Warning, "diff: fewer than half of the published keys are in the export; the adapter is probably wrong"},
}

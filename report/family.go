package report

import (
	"strings"
	"sync"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// A Family groups finding codes by what they are about; JUnit makes a test
// suite of each and SARIF tags its rules with it.
type Family string

// The finding families, in the order reports list them.
const (
	FamilyFormat Family = "format" // the safetensors format of each file
	FamilyIndex  Family = "index"  // the index against the shards
	FamilyConfig Family = "config" // config.json against the tensors, or against the published one
	FamilyKeys   Family = "keys"   // names, shapes, dtypes and adapters in a diff
	FamilyValues Family = "values" // the values of a diff --values
	FamilyFiles  Family = "files"  // the files themselves: missing, unreadable, beside the weights, hashes
)

// Families lists every family in report order.
func Families() []Family {
	return []Family{FamilyFormat, FamilyIndex, FamilyConfig, FamilyKeys, FamilyValues, FamilyFiles}
}

var familyOf = sync.OnceValue(func() map[verify.Code]Family {
	return map[verify.Code]Family{
		verify.CodeDuplicateKey:  FamilyFormat,
		verify.CodeUnalignedData: FamilyFormat,

		verify.CodeShardKeyNotInIndex:       FamilyIndex,
		verify.CodeDuplicateKeyAcrossShards: FamilyIndex,
		verify.CodeUnreferencedShard:        FamilyIndex,
		verify.CodeShardOfIndex:             FamilyIndex,

		verify.CodeMissingKey:       FamilyKeys,
		verify.CodeUnexpectedKey:    FamilyKeys,
		verify.CodeNotCompared:      FamilyKeys,
		verify.CodeShapeMismatch:    FamilyKeys,
		verify.CodeDTypeMismatch:    FamilyKeys,
		verify.CodeTiedWeight:       FamilyKeys,
		verify.CodeAdapterCollision: FamilyKeys,
		verify.CodeAdapterDropped:   FamilyKeys,
		verify.CodeAdapterAbsent:    FamilyKeys,
		verify.CodeAdapterError:     FamilyKeys,
		verify.CodeAdapterLimit:     FamilyKeys,
		verify.CodeLowKeyOverlap:    FamilyKeys,
		verify.CodeNeedsAdapter:     FamilyKeys,
		verify.CodeInferAmbiguous:   FamilyKeys,
		verify.CodeLoRAAdapter:      FamilyKeys,
		verify.CodeAdapterBeside:    FamilyKeys,
		// Quantized tensors stand for the missing keys they would make.
		verify.CodeQuantizedUnsupported:  FamilyKeys,
		verify.CodeQuantizedScaleMissing: FamilyKeys,
		verify.CodeQuantizedScaleShape:   FamilyKeys,
		verify.CodeQuantizedScaleUnused:  FamilyKeys,
		verify.CodeQuantizedConfig:       FamilyKeys,

		verify.CodeValueMismatch:      FamilyValues,
		verify.CodeQuantizationError:  FamilyValues,
		verify.CodeNonFinite:          FamilyValues,
		verify.CodeReinitialized:      FamilyValues,
		verify.CodeTiedWeightMismatch: FamilyValues,
		verify.CodeUnchanged:          FamilyValues,
		verify.CodeDriftExcessive:     FamilyValues,
		verify.CodeNotTrained:         FamilyValues,

		verify.CodeGGUFConfigMismatch: FamilyConfig,

		verify.CodeShardUnreadable: FamilyFiles,
		verify.CodeShardMissing:    FamilyFiles,
		verify.CodeEmptyCheckpoint: FamilyFiles,
		verify.CodeVariants:        FamilyFiles,
	}
})

// FamilyOf returns the family of a finding code. The reference
// implementation's error kinds are format findings; codes not listed go by
// their prefix (index_, config_, value_), and the rest, which are about
// files (missing files, manifests, hashes), are files findings.
func FamilyOf(c verify.Code) Family {
	if f, ok := familyOf()[c]; ok {
		return f
	}
	for _, k := range safetensors.ErrorKinds() {
		if c == verify.FormatCode(k) {
			return FamilyFormat
		}
	}
	switch s := string(c); {
	case strings.HasPrefix(s, "index_"):
		return FamilyIndex
	case strings.HasPrefix(s, "config_"):
		return FamilyConfig
	case strings.HasPrefix(s, "value_"):
		return FamilyValues
	}
	return FamilyFiles
}

package report

import (
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

func TestFamilyOf(t *testing.T) {
	for _, tt := range []struct {
		code verify.Code
		want Family
	}{
		{verify.CodeHeaderTooSmall, FamilyFormat},
		{verify.CodeMetadataIncompleteBuffer, FamilyFormat},
		{verify.CodeDuplicateKey, FamilyFormat},
		{verify.CodeIndexMissingShard, FamilyIndex},
		{verify.CodeShardKeyNotInIndex, FamilyIndex},
		{verify.CodeConfigMismatch, FamilyConfig},
		{verify.CodeMissingKey, FamilyKeys},
		{verify.CodeAdapterDropped, FamilyKeys},
		{verify.CodeReinitialized, FamilyValues},
		{verify.CodeUnchanged, FamilyValues},
		{verify.CodeShardMissing, FamilyFiles},
		// Codes this package does not list go by their prefix.
		{"config_changed", FamilyConfig},
		{"index_something", FamilyIndex},
		{"value_drift", FamilyValues},
		{"missing_file", FamilyFiles},
		{"manifest_mismatch", FamilyFiles},
		{"hash_mismatch", FamilyFiles},
	} {
		if got := FamilyOf(tt.code); got != tt.want {
			t.Errorf("FamilyOf(%s) = %s, want %s", tt.code, got, tt.want)
		}
	}
}

package tensorfile_test

import (
	"encoding/json"
	"fmt"

	"github.com/ckptcheck/ckptcheck/tensorfile"
)

func ExampleDType_UnmarshalText() {
	// Dtypes are their header names in JSON, both ways.
	var row struct {
		DType tensorfile.DType `json:"dtype"`
	}
	err := json.Unmarshal([]byte(`{"dtype":"BF16"}`), &row)
	fmt.Println(row.DType, row.DType.Bits(), err)
	fmt.Println(json.Unmarshal([]byte(`{"dtype":"bfloat16"}`), &row))
	// Output:
	// BF16 16 <nil>
	// unknown dtype "bfloat16"
}

package sarifschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ckptcheck/ckptcheck/report"
	"github.com/ckptcheck/ckptcheck/verify"
)

// sarifSchema compiles the SARIF 2.1.0 schema (JSON Schema draft-04) from
// the shared folder, with format assertions on (URIs must be URIs).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("..", "..", "..", "shared", "schemas", "sarif-schema-2.1.0.json")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%s is absent: %v", path, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSARIFSchema validates the report package's committed SARIF golden
// files (which its tests compare with the renderer's output) and the SARIF
// of an empty report.
func TestSARIFSchema(t *testing.T) {
	schema := sarifSchema(t)
	docs := map[string]string{}
	goldens, err := filepath.Glob(filepath.Join("..", "..", "report", "testdata", "*.sarif.json"))
	if err != nil || len(goldens) < 3 {
		t.Fatalf("SARIF golden files: %v %v", goldens, err)
	}
	for _, p := range goldens {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Base(p)] = string(b)
	}
	var empty strings.Builder
	if err := report.Write(&empty, "sarif", verify.NewReport("inspect", verify.Error, nil, nil), report.Options{}); err != nil {
		t.Fatal(err)
	}
	docs["empty"] = empty.String()
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("%s: not valid SARIF 2.1.0: %v", name, err)
			}
		})
	}
	// The schema does reject what is not SARIF.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"version": "2.1.0", "runs": [{"tool": {}}]}`))
	if schema.Validate(bad) == nil {
		t.Error("the schema accepted a run without a driver")
	}
}

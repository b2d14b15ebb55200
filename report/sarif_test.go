package report

import (
	"encoding/json"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

func TestSARIFRulesAndResults(t *testing.T) {
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Version string `json:"version"`
					Rules   []struct {
						ID               string `json:"id"`
						ShortDescription struct {
							Text string `json:"text"`
						} `json:"shortDescription"`
						DefaultConfiguration struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	r := validateReport()
	if err := json.Unmarshal([]byte(render(t, "sarif", r, goldenOptions)), &doc); err != nil {
		t.Fatal(err)
	}
	run := doc.Runs[0]
	codes := verify.Codes()
	if len(run.Tool.Driver.Rules) != len(codes) || run.Tool.Driver.Version != "v1.2.3-test" {
		t.Fatalf("%d rules for %d codes, version %q", len(run.Tool.Driver.Rules), len(codes), run.Tool.Driver.Version)
	}
	for i, c := range codes {
		rule := run.Tool.Driver.Rules[i]
		if rule.ID != string(c.Code) || rule.ShortDescription.Text != c.Doc || rule.DefaultConfiguration.Level != sarifLevel(c.Severity) {
			t.Errorf("rule %d: %+v, want %s", i, rule, c.Code)
		}
	}
	if len(run.Results) != len(r.Findings) {
		t.Fatalf("%d results for %d findings", len(run.Results), len(r.Findings))
	}
	for i, res := range run.Results {
		f := r.Findings[i]
		if res.RuleID != string(f.Code) || run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID || res.Level != sarifLevel(f.Severity) {
			t.Errorf("result %d: %+v for %s", i, res, f)
		}
		if len(res.Locations) != 1 || res.Locations[0].Physical.Artifact.URI != f.File {
			t.Errorf("result %d located at %+v, want %s", i, res.Locations, f.File)
		}
	}
}

func TestFileURI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"ckpt/model.safetensors", "ckpt/model.safetensors"},
		{"/data/ckpt/model.safetensors", "file:///data/ckpt/model.safetensors"},
		{"a b/c#d?.safetensors", "a%20b/c%23d%3F.safetensors"},
		{"c:d/x", "./c:d/x"},
	} {
		if got := fileURI(tt.in); got != tt.want {
			t.Errorf("fileURI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRuleName(t *testing.T) {
	if got := ruleName(verify.CodeInvalidHeaderDeserialization); got != "InvalidHeaderDeserialization" {
		t.Error(got)
	}
}

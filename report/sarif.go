package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/verify"
)

// SARIFSchema is the schema a SARIF report names: the OASIS standard's id.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

// codesURI is where the finding codes are documented.
const codesURI = "https://github.com/ckptcheck/ckptcheck#finding-codes"

// SARIF writes a report as SARIF 2.1.0 (GitHub code scanning, Azure DevOps
// and most security dashboards read it): one run of the tool, whose driver
// has a rule per finding code with the code's documentation, and a result
// per finding, located at its file (as a relative URI where the path is
// relative) and its tensor (as a logical location).
func SARIF(w io.Writer, r *verify.Report, opt Options) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string         `json:"id"`
		Name             string         `json:"name"`
		ShortDescription text           `json:"shortDescription"`
		FullDescription  text           `json:"fullDescription"`
		HelpURI          string         `json:"helpUri"`
		DefaultConfig    map[string]any `json:"defaultConfiguration"`
		Properties       map[string]any `json:"properties"`
	}
	type location struct {
		Physical *struct {
			Artifact struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
		} `json:"physicalLocation,omitempty"`
		Logical []map[string]string `json:"logicalLocations,omitempty"`
	}
	type result struct {
		RuleID       string            `json:"ruleId"`
		RuleIndex    int               `json:"ruleIndex"`
		Level        string            `json:"level"`
		Message      text              `json:"message"`
		Locations    []location        `json:"locations,omitempty"`
		Fingerprints map[string]string `json:"partialFingerprints"`
		Properties   map[string]any    `json:"properties,omitempty"`
	}

	docs := verify.Codes()
	for _, f := range r.Findings { // codes from a newer report read back
		if !slices.ContainsFunc(docs, func(d verify.CodeDoc) bool { return d.Code == f.Code }) {
			docs = append(docs, verify.CodeDoc{Code: f.Code, Severity: f.Severity, Doc: string(f.Code)})
		}
	}
	rules := make([]rule, len(docs))
	index := make(map[verify.Code]int, len(docs))
	for i, d := range docs {
		index[d.Code] = i
		rules[i] = rule{
			ID: string(d.Code), Name: ruleName(d.Code),
			ShortDescription: text{d.Doc}, FullDescription: text{d.Doc},
			HelpURI:       codesURI,
			DefaultConfig: map[string]any{"level": sarifLevel(d.Severity)},
			Properties:    map[string]any{"tags": []string{"ckptcheck", string(FamilyOf(d.Code))}},
		}
	}

	results := make([]result, 0, len(r.Findings))
	for _, f := range r.Findings {
		res := result{
			RuleID: string(f.Code), RuleIndex: index[f.Code], Level: sarifLevel(f.Severity),
			Message: text{findingLine(f, f.Key)},
		}
		var loc location
		// Where it is: its file, else the checkpoint it is about (code
		// scanning wants a physical location on every result).
		if file := findingPath(r, &f); file != "" {
			loc.Physical = new(struct {
				Artifact struct {
					URI string `json:"uri"`
				} `json:"artifactLocation"`
			})
			loc.Physical.Artifact.URI = fileURI(file)
		}
		if f.Key != "" {
			name := quote(f.Key)
			if f.Side != "" {
				name = string(f.Side) + ":" + name
			}
			loc.Logical = []map[string]string{{"name": quote(f.Key), "fullyQualifiedName": name, "kind": "member"}}
		}
		if loc.Physical != nil || loc.Logical != nil {
			res.Locations = []location{loc}
		}
		// A finding's identity across runs, for dashboards that track
		// alerts: its code, side, file and tensor.
		h := sha256.Sum256([]byte(strings.Join([]string{string(f.Code), string(f.Side), f.File, f.Key}, "\x00")))
		res.Fingerprints = map[string]string{"ckptcheckFinding/v1": hex.EncodeToString(h[:16])}
		props := map[string]any{}
		if f.Side != "" {
			props["side"] = string(f.Side)
		}
		if f.Physical != "" {
			props["physical"] = quote(f.Physical)
		}
		for k, v := range map[string]any{"published": f.Published, "exported": f.Exported, "expected": f.Expected, "got": f.Got} {
			if v != nil {
				props[k] = v
			}
		}
		if len(f.Keys) > 0 {
			props["keys"] = f.Keys
		}
		if len(props) > 0 {
			res.Properties = props
		}
		results = append(results, res)
	}

	exit := 0
	if !r.OK {
		exit = 1
	}
	version := opt.Version
	if version == "" {
		version = "unknown"
	}
	doc := map[string]any{
		"$schema": SARIFSchema,
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "ckptcheck", "version": version, "informationUri": "https://github.com/ckptcheck/ckptcheck",
				"rules": rules,
			}},
			"invocations": []any{map[string]any{
				"executionSuccessful": true, "exitCode": exit,
				"properties": map[string]any{"command": r.Command, "fail_on": r.FailOn.String(), "verdict": Verdict(r)},
			}},
			"columnKind": "unicodeCodePoints",
			"results":    results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

// findingPath is a finding's file, else the path of the input it is about:
// its side's, else the export's, else the only one.
func findingPath(r *verify.Report, f *verify.Finding) string {
	if f.File != "" {
		return f.File
	}
	for _, side := range []verify.Side{f.Side, verify.Exported} {
		for _, in := range r.Inputs {
			if side != "" && in.Side == side {
				return in.Path
			}
		}
	}
	if len(r.Inputs) == 1 {
		return r.Inputs[0].Path
	}
	return ""
}

func sarifLevel(s verify.Severity) string {
	switch s {
	case verify.Error:
		return "error"
	case verify.Warning:
		return "warning"
	}
	return "note"
}

// ruleName is a code in the CamelCase SARIF viewers show: MissingKey.
func ruleName(c verify.Code) string {
	var b strings.Builder
	for part := range strings.SplitSeq(string(c), "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// fileURI is a path as a SARIF artifact URI: a relative reference for a
// relative path (relative to where ckptcheck ran), a file URI for an
// absolute one; every character that is not allowed in a URI is escaped.
func fileURI(p string) string {
	p = filepath.ToSlash(p)
	if strings.HasPrefix(p, "/") {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}

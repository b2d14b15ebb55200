package manifest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/verify"
)

// Compare compares a checkpoint's manifest (got, built now) with the
// one recorded (want): manifest_mismatch for each tensor whose dtype, shape
// or bytes differ and each other file whose bytes differ,
// manifest_missing and manifest_extra for tensors and files on one side
// only. Shards and the index are judged by the tensors they hold: when every
// tensor matches, shard files that differ (a re-sharded or re-written
// checkpoint) are one manifest_shards_differ info. where says how reports
// name a file of the checkpoint (its Source's Path); where(".") names the
// checkpoint. It is a pure function of its inputs.
func Compare(want, got *Manifest, where func(name string) string) []verify.Finding {
	path := where(".")
	var out []verify.Finding
	wantT := make(map[string]*Tensor, len(want.Tensors))
	for i := range want.Tensors {
		wantT[want.Tensors[i].Name] = &want.Tensors[i]
	}
	gotT := make(map[string]bool, len(got.Tensors))
	for _, g := range got.Tensors {
		gotT[g.Name] = true
		w, ok := wantT[g.Name]
		if !ok {
			out = append(out, verify.Finding{Code: verify.CodeManifestExtra, Severity: verify.Error, Key: g.Name, File: where(g.File),
				Message: fmt.Sprintf("a %s %s tensor the manifest does not list", g.DType, safetensors.FormatShape(g.Shape))})
			continue
		}
		if g.XXH3 == "" {
			continue // its shard could not be read: validation says why
		}
		var diffs []string
		var expected, gotDetail []string
		if w.DType != g.DType {
			diffs = append(diffs, fmt.Sprintf("dtype %s → %s", w.DType, g.DType))
			expected, gotDetail = append(expected, w.DType), append(gotDetail, g.DType)
		}
		if !slices.Equal(w.Shape, g.Shape) {
			diffs = append(diffs, fmt.Sprintf("shape %s → %s", safetensors.FormatShape(w.Shape), safetensors.FormatShape(g.Shape)))
			expected, gotDetail = append(expected, safetensors.FormatShape(w.Shape)), append(gotDetail, safetensors.FormatShape(g.Shape))
		}
		if w.XXH3 != g.XXH3 && len(diffs) == 0 {
			diffs = append(diffs, fmt.Sprintf("bytes differ (xxh3 %s in the manifest, %s here)", w.XXH3, g.XXH3))
			expected, gotDetail = append(expected, "xxh3:"+w.XXH3), append(gotDetail, "xxh3:"+g.XXH3)
		}
		if len(diffs) > 0 {
			out = append(out, verify.Finding{Code: verify.CodeManifestMismatch, Severity: verify.Error, Key: g.Name, File: where(g.File),
				Message: strings.Join(diffs, ", "), Expected: strings.Join(expected, ", "), Got: strings.Join(gotDetail, ", ")})
		}
	}
	for _, w := range want.Tensors {
		if !gotT[w.Name] {
			out = append(out, verify.Finding{Code: verify.CodeManifestMissing, Severity: verify.Error, Key: w.Name,
				Message: fmt.Sprintf("the manifest lists a %s %s tensor (in %s) that %s does not have", w.DType, safetensors.FormatShape(w.Shape), textfmt.Quote(w.File), textfmt.Quote(path))})
		}
	}
	tensorsMatch := len(out) == 0
	wantF := make(map[string]*File, len(want.Files))
	for i := range want.Files {
		wantF[want.Files[i].Name] = &want.Files[i]
	}
	gotF := make(map[string]*File, len(got.Files))
	for i := range got.Files {
		gotF[got.Files[i].Name] = &got.Files[i]
	}
	var weightsDiffer []string
	for _, g := range got.Files {
		w := wantF[g.Name]
		switch {
		case weightFile(g.Kind) || (w != nil && weightFile(w.Kind)):
			if w == nil || w.SHA256 != g.SHA256 || w.Kind != g.Kind {
				weightsDiffer = append(weightsDiffer, g.Name)
			}
		case w == nil:
			out = append(out, verify.Finding{Code: verify.CodeManifestExtra, Severity: verify.Error, File: where(g.Name),
				Message: fmt.Sprintf("a file (%s, %s) the manifest does not list", g.Kind, textfmt.Plural(g.Size, "byte"))})
		case w.SHA256 != g.SHA256:
			out = append(out, verify.Finding{Code: verify.CodeManifestMismatch, Severity: verify.Error, File: where(g.Name),
				Message:  fmt.Sprintf("bytes differ from the manifest's (%s → %s; sha256 %s… → %s…)", textfmt.Plural(w.Size, "byte"), textfmt.Plural(g.Size, "byte"), w.SHA256[:12], g.SHA256[:12]),
				Expected: "sha256:" + w.SHA256, Got: "sha256:" + g.SHA256})
		}
	}
	for _, w := range want.Files {
		if gotF[w.Name] != nil {
			continue
		}
		if weightFile(w.Kind) {
			weightsDiffer = append(weightsDiffer, w.Name)
			continue
		}
		out = append(out, verify.Finding{Code: verify.CodeManifestMissing, Severity: verify.Error, File: where(w.Name),
			Message: fmt.Sprintf("the manifest lists this file (%s, %s) but %s does not have it", w.Kind, textfmt.Plural(w.Size, "byte"), textfmt.Quote(path))})
	}
	if tensorsMatch && len(weightsDiffer) > 0 {
		slices.Sort(weightsDiffer)
		out = append(out, verify.Finding{Code: verify.CodeManifestShardsDiffer, Severity: verify.Info, File: path,
			Message: fmt.Sprintf("every tensor matches the manifest, but the shard files differ (re-sharded or re-written): %s", textfmt.Names(weightsDiffer, 6))})
	}
	return out
}

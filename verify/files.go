package verify

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/checkpoint"
	"github.com/ckptcheck/ckptcheck/internal/filehash"
	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// FileOptions say how to judge the files beside the weights.
type FileOptions struct {
	// RequireFiles makes every file the published side has and the export
	// lacks a missing_file error: the gate before an upload.
	RequireFiles bool
}

// maxCompanionRead bounds the bytes read of one file beside the weights to
// say what changed in it; the largest tokenizer.json files are ~35 MB.
// Larger files are compared by digest only.
const maxCompanionRead = 128 << 20

// CompareFiles judges the files beside an export's weights against the
// published checkpoint's: an export with no config or tokenizer files at
// all is weights_only_export (info; with RequireFiles every published file
// is a missing_file error); otherwise each file the published side has and
// the export lacks is missing_file, config.json is compared field by field
// (config_changed), and tokenizer files, the chat template and the special
// token ids are compared (tokenizer_changed). Files are compared by size
// and the digests their sources know first, then by hashing; only files
// that differ are read, to say what changed. A GGUF export's embedded
// tokenizer is compared with the published files too (see
// ggufTokenizerChanges). Each side's files are listed once.
func CompareFiles(ctx context.Context, pub, exp *checkpoint.Checkpoint, opt FileOptions) ([]Finding, error) {
	pf, err := pub.Companions(ctx)
	if err != nil {
		return nil, err
	}
	ef, err := exp.Companions(ctx)
	if err != nil {
		return nil, err
	}
	p, e := newCompanions(pub, pf), newCompanions(exp, ef)
	out, err := compareCompanions(ctx, p, e, opt)
	if err != nil {
		return nil, err
	}
	fs, err := ggufTokenizerChanges(ctx, p, exp)
	return append(out, fs...), err
}

// compareCompanions judges the export's files beside the weights against
// the published ones (see CompareFiles).
func compareCompanions(ctx context.Context, p, e *companions, opt FileOptions) ([]Finding, error) {
	pub, exp := p.c, e.c
	pf, ef := p.list, e.list
	missingSev := Warning
	if opt.RequireFiles {
		missingSev = Error
	}
	if len(ef) == 0 {
		if len(pf) == 0 {
			return nil, nil
		}
		if opt.RequireFiles {
			return missingFiles(e, pf, missingSev), nil
		}
		return []Finding{{Code: CodeWeightsOnlyExport, Severity: Info, File: exp.Path,
			Message: fmt.Sprintf("the export holds weights only (no config or tokenizer files, normal mid-pipeline); copy %s from the published checkpoint before upload (--require-files makes this an error)",
				fileList(pf))}}, nil
	}
	changed, err := changedFiles(ctx, p, e)
	if err != nil {
		return nil, err
	}
	// The chat template is read only when a file that may hold it differs.
	var templates [2]*chatTemplate
	for _, name := range []string{"chat_template.jinja", "chat_template.json", "tokenizer_config.json"} {
		if presenceDiffers(p, e, name) || slices.Contains(changed, name) {
			for i, side := range []*companions{p, e} {
				if templates[i], err = side.chatTemplate(ctx); err != nil {
					return nil, err
				}
			}
			break
		}
	}
	var out []Finding
	for _, fi := range pf {
		if _, ok := e.files[fi.Name]; ok {
			continue
		}
		if checkpoint.CompanionKind(fi.Name) == checkpoint.KindChatTemplate && templates[1] != nil {
			continue // the export keeps its template elsewhere; compared below
		}
		out = append(out, missingFile(e, fi, missingSev))
	}
	out = append(out, compareConfigs(parsedConfig(pub), parsedConfig(exp))...)
	tokenizerConfigDiffers := false
	for _, name := range changed {
		switch name {
		case "config.json":
			// compared field by field above, from the parsed configs
		case "tokenizer_config.json", "special_tokens_map.json":
			tokenizerConfigDiffers = true
		case "chat_template.jinja", "chat_template.json":
			// compared as the effective template below
		case "tokenizer.json":
			fs, err := compareTokenizerJSON(ctx, p, e)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		case "generation_config.json":
			fs, err := compareGeneration(ctx, p, e)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		default:
			fs, err := compareOther(ctx, p, e, name)
			if err != nil {
				return nil, err
			}
			out = append(out, fs...)
		}
	}
	// Special tokens live in tokenizer_config.json and, for older writers,
	// in special_tokens_map.json as well: compared as one.
	// An export without either file has its missing_file findings already.
	_, hasConfig := e.files["tokenizer_config.json"]
	_, hasMap := e.files["special_tokens_map.json"]
	if (hasConfig || hasMap) && (tokenizerConfigDiffers || presenceDiffers(p, e, "tokenizer_config.json") || presenceDiffers(p, e, "special_tokens_map.json")) {
		fs, err := compareTokenizerConfig(ctx, p, e)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	if templates[1] != nil || hasConfig {
		out = append(out, compareChatTemplates(e, templates[0], templates[1])...)
	}
	return out, nil
}

// companions are one side's files beside the weights and the JSON objects
// decoded of them.
type companions struct {
	c       *checkpoint.Checkpoint
	list    []checkpoint.FileInfo // sorted by name
	files   map[string]checkpoint.FileInfo
	objects map[string]map[string]any
}

func newCompanions(c *checkpoint.Checkpoint, files []checkpoint.FileInfo) *companions {
	s := &companions{c: c, list: files, files: make(map[string]checkpoint.FileInfo, len(files))}
	for _, fi := range files {
		s.files[fi.Name] = fi
	}
	return s
}

// bytes reads a file whole, or nil when the side does not have it. A file
// over maxCompanionRead is errTooLargeToShow. Nothing is kept: JSON files
// are read with object or as a stream.
func (s *companions) bytes(ctx context.Context, name string) ([]byte, error) {
	if _, ok := s.files[name]; !ok {
		return nil, nil
	}
	b, err := s.c.ReadFile(ctx, name, maxCompanionRead)
	if errors.Is(err, checkpoint.ErrTooLarge) {
		return nil, errTooLargeToShow
	}
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// errTooLargeToShow marks a file too large to read to say what changed.
var errTooLargeToShow = errors.New("too large to read")

func (s *companions) path(name string) string { return s.c.Source.Path(name) }

func presenceDiffers(p, e *companions, name string) bool {
	_, a := p.files[name]
	_, b := e.files[name]
	return a != b
}

func missingFiles(e *companions, pf []checkpoint.FileInfo, sev Severity) []Finding {
	out := make([]Finding, 0, len(pf))
	for _, fi := range pf {
		out = append(out, missingFile(e, fi, sev))
	}
	return out
}

func missingFile(e *companions, fi checkpoint.FileInfo, sev Severity) Finding {
	return Finding{Code: CodeMissingFile, Severity: sev, File: e.path(fi.Name),
		Message:   fmt.Sprintf("the published checkpoint has this %s file (%s) and the export does not; copy it before upload", checkpoint.CompanionKind(fi.Name), textfmt.Plural(fi.Size, "byte")),
		Published: fi.Size}
}

// fileList names files for a message: "config.json, tokenizer.json and 3
// more".
func fileList(files []checkpoint.FileInfo) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return textfmt.Names(names, 8)
}

// changedFiles lists the files both sides have whose bytes differ, sorted:
// by size first, then by the digests the sources know, then by hashing
// what is left (one side's file, to compare with the other's known
// digest, or both).
func changedFiles(ctx context.Context, p, e *companions) ([]string, error) {
	var changed []string
	type pending struct {
		name string
		algo checkpoint.DigestAlgo
	}
	var todo []pending
	for name, a := range p.files {
		b, ok := e.files[name]
		if !ok {
			continue
		}
		if a.Size != b.Size {
			changed = append(changed, name)
			continue
		}
		if same, known := checkpoint.SameBytes(a.Digest, b.Digest); known {
			if !same {
				changed = append(changed, name)
			}
			continue
		}
		algo := checkpoint.SHA256
		for _, d := range []checkpoint.Digest{a.Digest, b.Digest} {
			if d.Verifiable() {
				algo = d.Algo
				break
			}
		}
		todo = append(todo, pending{name, algo})
	}
	if len(todo) > 0 {
		// Hash what each side does not know, then compare.
		digests := [2]map[string]string{{}, {}}
		for i, side := range []*companions{p, e} {
			var jobs []filehash.Job
			for _, t := range todo {
				fi := side.files[t.name]
				if fi.Digest.Algo == t.algo {
					digests[i][t.name] = fi.Digest.Value
					continue
				}
				jobs = append(jobs, filehash.Job{Name: t.name, Size: fi.Size, Want: filehash.Want{SHA256: t.algo == checkpoint.SHA256, GitSHA1: t.algo == checkpoint.GitSHA1}})
			}
			src := side.c.Source
			results, err := filehash.Files(ctx, jobs, src.Open, filehash.Options{Path: src.Path, Changed: checkpoint.ErrChanged})
			if err != nil {
				return nil, err
			}
			for k, j := range jobs {
				if j.GitSHA1 {
					digests[i][j.Name] = hex.EncodeToString(results[k].GitSHA1[:])
				} else {
					digests[i][j.Name] = hex.EncodeToString(results[k].SHA256[:])
				}
			}
		}
		for _, t := range todo {
			if digests[0][t.name] != digests[1][t.name] {
				changed = append(changed, t.name)
			}
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// compareOther says how a file other than the tokenizer's main files
// changed: field by field for JSON files (processor configs), by size for
// the rest (vocabularies, merges, sentencepiece models).
func compareOther(ctx context.Context, p, e *companions, name string) ([]Finding, error) {
	kind := checkpoint.CompanionKind(name)
	code, sev := CodeTokenizerChanged, Warning
	if kind != checkpoint.KindTokenizer {
		code, sev = CodeConfigChanged, Info
	}
	if strings.HasSuffix(name, ".json") && kind == checkpoint.KindTokenizer {
		// vocab.json, added_tokens.json: tables of thousands of entries,
		// summarised by their sizes, counted as a stream.
		na, okA, errA := entryCount(ctx, p, name)
		nb, okB, errB := entryCount(ctx, e, name)
		if err := errors.Join(errA, errB); err != nil {
			return nil, err
		}
		if okA && okB {
			return []Finding{{Code: code, Severity: sev, File: e.path(name),
				Message:   fmt.Sprintf("the entries differ from the published %s (%s → %s)", name, textfmt.Plural(na, "entry"), textfmt.Plural(nb, "entry")),
				Published: na, Exported: nb}}, nil
		}
	} else if strings.HasSuffix(name, ".json") {
		am, aok, errA := p.objectCopy(ctx, name)
		bm, bok, errB := e.objectCopy(ctx, name)
		if err := errors.Join(errA, errB); err != nil {
			return nil, err
		}
		if aok && bok {
			var ff fieldFindings
			for _, ch := range diffJSON("", normaliseConfig(am), normaliseConfig(bm)) {
				ff.add(Finding{Code: code, Severity: sev, File: e.path(name), Key: ch.path,
					Message: changeMessage(ch), Published: ch.pub, Exported: ch.exp})
			}
			return ff.findings(e.path(name)), nil // none when no field differs: formatting only
		}
	}
	a, b := p.files[name], e.files[name]
	return []Finding{{Code: code, Severity: sev, File: e.path(name),
		Message:   fmt.Sprintf("the bytes differ from the published %s (%s → %s)", name, textfmt.Plural(a.Size, "byte"), textfmt.Plural(b.Size, "byte")),
		Published: a.Size, Exported: b.Size}}, nil
}

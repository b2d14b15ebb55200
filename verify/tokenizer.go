package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ckptcheck/ckptcheck/internal/textfmt"
)

// Comparing tokenizers. transformers keeps a tokenizer in tokenizer.json
// (the tokenizers library's file: vocabulary, merges, added tokens,
// pre- and post-processing), tokenizer_config.json (special tokens, the
// chat template in older files, loading options), special_tokens_map.json
// (older writers) and chat_template.jinja (newer writers; chat_template.json
// between them). A template that moved from tokenizer_config.json to
// chat_template.jinja is the same template.

// A chatTemplate is a side's effective chat template(s), by name
// ("default" for a single one), and the file they came from.
type chatTemplate struct {
	source    string
	templates map[string]string
}

// chatTemplate finds the side's chat template: chat_template.jinja, else
// chat_template.json, else tokenizer_config.json's chat_template (a string,
// or a list of {name, template}). nil when there is none.
func (s *companions) chatTemplate(ctx context.Context) (*chatTemplate, error) {
	if _, ok := s.files["chat_template.jinja"]; ok {
		b, err := s.bytes(ctx, "chat_template.jinja")
		if err != nil {
			return nil, tolerateTooLarge(err)
		}
		return &chatTemplate{source: "chat_template.jinja", templates: map[string]string{"default": string(b)}}, nil
	}
	for _, name := range []string{"chat_template.json", "tokenizer_config.json"} {
		if _, ok := s.files[name]; !ok {
			continue
		}
		m, _, err := s.object(ctx, name)
		if err != nil {
			return nil, err
		}
		if t := templatesOf(m["chat_template"]); t != nil {
			return &chatTemplate{source: name, templates: t}, nil
		}
	}
	return nil, nil
}

func tolerateTooLarge(err error) error {
	if errors.Is(err, errTooLargeToShow) {
		return nil
	}
	return err
}

func templatesOf(v any) map[string]string {
	switch v := v.(type) {
	case string:
		return map[string]string{"default": v}
	case []any:
		out := make(map[string]string)
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				name, _ := m["name"].(string)
				text, _ := m["template"].(string)
				if name != "" {
					out[name] = text
				}
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// compareChatTemplates reports a chat template removed, added or changed.
func compareChatTemplates(e *companions, a, b *chatTemplate) []Finding {
	switch {
	case a == nil && b == nil:
		return nil
	case b == nil:
		return []Finding{{Code: CodeTokenizerChanged, Severity: Warning, File: e.c.Path, Key: "chat_template",
			Message: "the export has no chat template; the published checkpoint has one (in " + a.source + ")"}}
	case a == nil:
		return []Finding{{Code: CodeTokenizerChanged, Severity: Warning, File: e.path(b.source), Key: "chat_template",
			Message: "the export has a chat template the published checkpoint does not have"}}
	}
	var out []Finding
	names := slices.Sorted(maps.Keys(a.templates))
	for n := range b.templates {
		if _, ok := a.templates[n]; !ok {
			names = append(names, n)
		}
	}
	for _, n := range names {
		at, aok := a.templates[n]
		bt, bok := b.templates[n]
		key := "chat_template"
		if n != "default" {
			key += "." + n
		}
		var msg string
		switch {
		case !bok:
			msg = "the export lacks this chat template"
		case !aok:
			msg = "the export adds this chat template"
		case at != bt:
			na, nb := utf8.RuneCountInString(at), utf8.RuneCountInString(bt)
			size := textfmt.Plural(na, "character") + " → " + textfmt.Plural(nb, "character")
			if na == nb {
				size = textfmt.Plural(na, "character") + " on both sides"
			}
			msg = fmt.Sprintf("the chat template changed (%s; first difference at line %d)", size, firstDiffLine(at, bt))
		default:
			continue
		}
		out = append(out, Finding{Code: CodeTokenizerChanged, Severity: Warning, File: e.path(b.source), Key: key, Message: msg})
	}
	return out
}

// firstDiffLine is the 1-based line of the first byte where a and b differ.
func firstDiffLine(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return strings.Count(a[:n], "\n") + 1
}

// specialTokens are the special tokens of tokenizer_config.json and
// special_tokens_map.json whose change changes tokenization.
var specialTokens = []string{"bos_token", "eos_token", "pad_token", "unk_token", "sep_token", "cls_token", "mask_token",
	"additional_special_tokens", "extra_special_tokens"}

// ignoredTokenizerFields are bookkeeping, or compared on their own.
var ignoredTokenizerFields = map[string]bool{"chat_template": true, "name_or_path": true, "_name_or_path": true,
	"tokenizer_file": true, "transformers_version": true, "added_tokens_decoder": true}

// compareTokenizerConfig compares the special tokens (tokenizer_config.json
// over special_tokens_map.json), the added tokens, and the other loading
// options of tokenizer_config.json.
func compareTokenizerConfig(ctx context.Context, p, e *companions) ([]Finding, error) {
	var cfg, stm [2]map[string]any
	for i, side := range []*companions{p, e} {
		for j, name := range []string{"tokenizer_config.json", "special_tokens_map.json"} {
			m, _, err := side.object(ctx, name)
			if err != nil {
				return nil, err
			}
			if j == 0 {
				cfg[i] = m
			} else {
				stm[i] = m
			}
		}
	}
	file := e.path("tokenizer_config.json")
	if _, ok := e.files["tokenizer_config.json"]; !ok {
		file = e.path("special_tokens_map.json")
	}
	var out []Finding
	for _, k := range specialTokens {
		var v [2]any
		for i := range 2 {
			v[i] = tokenContent(cfg[i][k])
			if v[i] == nil {
				v[i] = tokenContent(stm[i][k])
			}
		}
		if v[0] == nil && v[1] == nil || jsonEqual(v[0], v[1]) {
			continue
		}
		ch := fieldChange{path: k, pub: v[0], exp: v[1], pubOK: v[0] != nil, expOK: v[1] != nil}
		out = append(out, Finding{Code: CodeTokenizerChanged, Severity: Warning, File: file, Key: k,
			Message: changeMessage(ch), Published: v[0], Exported: v[1]})
	}
	if msg := addedTokensChange(addedTokensDecoder(cfg[0]), addedTokensDecoder(cfg[1])); msg != "" {
		out = append(out, Finding{Code: CodeTokenizerChanged, Severity: Warning, File: file, Key: "added_tokens_decoder", Message: msg})
	}
	if cfg[0] != nil && cfg[1] != nil {
		a, b := maps.Clone(cfg[0]), maps.Clone(cfg[1])
		for _, m := range []map[string]any{a, b} {
			for k := range m {
				if ignoredTokenizerFields[k] || slices.Contains(specialTokens, k) {
					delete(m, k)
				}
			}
		}
		var ff fieldFindings
		for _, ch := range diffJSON("", a, b) {
			sev := Warning
			if !ch.pubOK || !ch.expOK {
				sev = Info // a default one writer spells out
			}
			ff.add(Finding{Code: CodeTokenizerChanged, Severity: sev, File: file, Key: ch.path,
				Message: changeMessage(ch), Published: ch.pub, Exported: ch.exp})
		}
		out = append(out, ff.findings(file)...)
	}
	return out, nil
}

// tokenContent is a special token's text: a string, an AddedToken object's
// content, or for a list of tokens the list of their texts.
func tokenContent(v any) any {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if c, ok := v["content"].(string); ok {
			return c
		}
		out := make(map[string]any, len(v)) // extra_special_tokens: {"name": token}
		for k, x := range v {
			out[k] = tokenContent(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = tokenContent(x)
		}
		return out
	}
	return v
}

// addedTokensDecoder reads tokenizer_config.json's added_tokens_decoder:
// id → content.
func addedTokensDecoder(cfg map[string]any) map[string]string {
	m, ok := cfg["added_tokens_decoder"].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for id, v := range m {
		if c, ok := tokenContent(v).(string); ok {
			out[id] = c
		}
	}
	return out
}

// addedTokensChange says how two id → content maps differ: "2 added
// (151669 "<think>", 151670 "</think>"), 1 changed (151643: ...)".
func addedTokensChange(a, b map[string]string) string {
	if a == nil || b == nil {
		return ""
	}
	var added, removed, changed []string
	for id, c := range b {
		old, ok := a[id]
		switch {
		case !ok:
			added = append(added, id+" "+strconv.Quote(c))
		case old != c:
			changed = append(changed, fmt.Sprintf("%s %q → %q", id, old, c))
		}
	}
	for id, c := range a {
		if _, ok := b[id]; !ok {
			removed = append(removed, id+" "+strconv.Quote(c))
		}
	}
	var parts []string
	for _, x := range []struct {
		what string
		l    []string
	}{{"added", added}, {"removed", removed}, {"changed", changed}} {
		if len(x.l) > 0 {
			slices.SortFunc(x.l, compareIDs)
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(x.l), x.what, textfmt.Quote(textfmt.Names(x.l, 3))))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "added tokens: " + strings.Join(parts, ", ")
}

// compareIDs orders "12 ..." before "100 ...".
func compareIDs(a, b string) int {
	ai, _, _ := strings.Cut(a, " ")
	bi, _, _ := strings.Cut(b, " ")
	x, errA := strconv.Atoi(ai)
	y, errB := strconv.Atoi(bi)
	if errA == nil && errB == nil && x != y {
		return x - y
	}
	return strings.Compare(a, b)
}

// tokenizerSections are tokenizer.json's top-level members, in the order
// findings name them.
var tokenizerSections = []string{"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor", "decoder", "model"}

// compareTokenizerJSON says which parts of tokenizer.json changed: the
// vocabulary or merges (with their sizes), the added tokens (which), the
// normalizer, pre-tokenizer, post-processor or decoder. Each side is read
// as a stream, one at a time, and only small parts are kept decoded.
func compareTokenizerJSON(ctx context.Context, p, e *companions) ([]Finding, error) {
	file := e.path("tokenizer.json")
	var tf [2]*tokenizerFile
	for i, side := range []*companions{p, e} {
		r, done, err := side.stream(ctx, "tokenizer.json")
		if errors.Is(err, errTooLargeToShow) {
			return compareOther(ctx, p, e, "tokenizer.json")
		}
		if err != nil {
			return nil, err
		}
		tf[i], err = summariseTokenizer(r)
		done()
		if errors.Is(err, errNotJSON) {
			return []Finding{{Code: CodeTokenizerChanged, Severity: Warning, File: file,
				Message: fmt.Sprintf("tokenizer.json differs and one side is not a JSON object (%s → %s)",
					textfmt.Plural(p.files["tokenizer.json"].Size, "byte"), textfmt.Plural(e.files["tokenizer.json"].Size, "byte"))}}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	am, bm := tf[0].sections, tf[1].sections
	var out []Finding
	add := func(key, msg string) {
		out = append(out, Finding{Code: CodeTokenizerChanged, Severity: Warning, File: file, Key: key, Message: msg})
	}
	sections := slices.Clone(tokenizerSections)
	for _, f := range []*tokenizerFile{tf[1], tf[0]} {
		for _, k := range f.order {
			if !slices.Contains(sections, k) {
				sections = append(sections, k)
			}
		}
	}
	for _, k := range sections {
		ra, aok := am[k]
		rb, bok := bm[k]
		if !aok && !bok || aok && bok && ra.same(rb) {
			continue
		}
		switch {
		case !aok || !bok:
			side := "published"
			if bok {
				side = "exported"
			}
			add(k, "only in the "+side+" tokenizer.json")
		case k == "added_tokens":
			msg := addedTokensChange(addedTokensList(ra), addedTokensList(rb))
			switch {
			case msg != "":
			case !ra.kept || !rb.kept:
				msg = fmt.Sprintf("the added tokens changed (%s → %s)", textfmt.Plural(ra.count, "entry"), textfmt.Plural(rb.count, "entry"))
			default:
				msg = "the added tokens' options changed (special, normalized, lstrip, rstrip)"
			}
			add(k, msg)
		case k == "model":
			for _, msg := range modelChanges(tf[0].model, tf[1].model) {
				add(msg[0], msg[1])
			}
		default:
			add(k, "the "+strings.ReplaceAll(k, "_", "-")+" changed")
		}
	}
	return out, nil
}

// addedTokensList reads tokenizer.json's added_tokens: id → content; nil
// when they are not a list of tokens or were too large to keep.
func addedTokensList(s jsonSummary) map[string]string {
	list, ok := s.value.([]any)
	if !s.kept || !ok {
		return nil
	}
	out := make(map[string]string, len(list))
	for _, x := range list {
		t, ok := x.(map[string]any)
		if !ok {
			return nil
		}
		id, idOK := t["id"].(json.Number)
		content, contentOK := t["content"].(string)
		if t["id"] != nil && !idOK || t["content"] != nil && !contentOK {
			return nil
		}
		out[id.String()] = content
	}
	return out
}

// modelChanges says how tokenizer.json's model differs: its type, the
// vocabulary's and merges' sizes, other options. Each is a key and a
// message. A model that is not an object on either side has no members.
func modelChanges(ma, mb map[string]jsonSummary) [][2]string {
	if ma == nil || mb == nil {
		return [][2]string{{"model", "the model changed"}}
	}
	var out [][2]string
	keys := slices.Sorted(maps.Keys(ma))
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		ra, aok := ma[k]
		rb, bok := mb[k]
		if aok && bok && ra.same(rb) {
			continue
		}
		switch k {
		case "vocab", "merges":
			na, nb := ra.count, rb.count
			msg := fmt.Sprintf("the %s changed (%s → %s)", k, textfmt.Plural(na, "entry"), textfmt.Plural(nb, "entry"))
			if na == nb {
				msg = fmt.Sprintf("the %s changed (%s on both sides, different entries)", k, textfmt.Plural(na, "entry"))
			}
			out = append(out, [2]string{"model." + k, msg})
		default:
			out = append(out, [2]string{"model." + k, summaryText(ra, aok) + " → " + summaryText(rb, bok)})
		}
	}
	return out
}

// summaryText writes a summarised value for a message, as jsonText does.
func summaryText(s jsonSummary, ok bool) string {
	switch {
	case !ok:
		return jsonText(nil)
	case !s.kept:
		return "(too large to show)"
	}
	return jsonText(s.value)
}

// compareGeneration compares generation_config.json: the special token ids
// (tokenizer_changed), then the sampling defaults (config_changed, info).
func compareGeneration(ctx context.Context, p, e *companions) ([]Finding, error) {
	file := e.path("generation_config.json")
	am, aok, errA := p.objectCopy(ctx, "generation_config.json")
	bm, bok, errB := e.objectCopy(ctx, "generation_config.json")
	if err := errors.Join(errA, errB); err != nil {
		return nil, err
	}
	if !aok || !bok {
		return compareOther(ctx, p, e, "generation_config.json")
	}
	for _, m := range []map[string]any{am, bm} {
		delete(m, "transformers_version")
		delete(m, "_from_model_config")
	}
	var ff fieldFindings
	for _, ch := range diffJSON("", am, bm) {
		f := Finding{Code: CodeConfigChanged, Severity: Info, File: file, Key: ch.path, Message: changeMessage(ch), Published: ch.pub, Exported: ch.exp}
		if tokenIDFields()[ch.path] {
			f.Code, f.Severity, f.Message = CodeTokenizerChanged, Warning, "special token id "+f.Message
		}
		ff.add(f)
	}
	return ff.findings(file), nil
}

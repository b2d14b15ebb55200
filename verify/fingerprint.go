package verify

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"strconv"

	"github.com/ckptcheck/ckptcheck/adapter"
	"github.com/ckptcheck/ckptcheck/checkpoint"
)

// fingerprintVersion changes whenever what Fingerprint covers changes, so
// that reports of two versions never merge by accident.
const fingerprintVersion = "ckptcheck.fingerprint/v2"

// Fingerprint is a digest ("sha256:…") of everything that decides the
// result of a diff and its value comparison, so that Merge can refuse
// partition reports of different runs:
//
//   - settings, the caller's judgement settings in a fixed order: the tool
//     version and every command-line flag that changes a result (adapters
//     chosen by name and the contents of adapter files, renames, prefixes,
//     ties, dtype, tolerances, ignores), as "name=value" lines;
//   - the value policy (what is expected, the default tolerance and drift
//     bound, and the rules);
//   - for each side, the files read: each shard's name, size and version
//     (its modification time, or for a checkpoint resolved in the hub cache
//     the commit), the index's mapping and config.json's fields as parsed,
//     and what could not be read;
//   - the resolved mapping of each side: the adapter chosen, and every
//     logical tensor's name, dtype, shape and segments (physical tensor,
//     shard, byte range), with what the adapter dropped, ignored or could
//     not map; a quantized weight's encoding, parts and companions;
//   - what is known of tie_word_embeddings.
//
// Paths are not in it: the same files mounted elsewhere fingerprint alike.
func (d *Comparison) Fingerprint(policy ValuePolicy, settings []string) string {
	w := fingerprinter{h: sha256.New()}
	w.str(fingerprintVersion)
	w.strs(settings)
	expect, _ := ParseExpect(string(policy.Expect))
	w.str(string(expect))
	w.str(policy.Default.String())
	drift := DefaultDrift
	if policy.Drift != nil {
		drift = *policy.Drift
	}
	w.str(strconv.FormatFloat(drift.MaxRelL2, 'g', -1, 64) + " " + strconv.FormatFloat(drift.MinCosine, 'g', -1, 64))
	w.num(len(policy.Rules))
	for _, r := range policy.Rules {
		w.str(r.Match)
		w.str(r.Skip)
		for _, v := range []*float64{r.Atol, r.Rtol, r.MaxRelL2, r.MinCosine} {
			if v == nil {
				w.str("unset")
			} else {
				w.str(strconv.FormatFloat(*v, 'g', -1, 64))
			}
		}
	}
	w.str(strconv.FormatBool(d.Tie.Known) + " " + strconv.FormatBool(d.Tie.Tied) + " " + d.Tie.Source)
	for _, m := range []*Mapped{d.Published, d.Exported} {
		w.str(string(m.Side))
		w.checkpoint(m.Checkpoint)
		w.mapped(m)
	}
	return "sha256:" + hex.EncodeToString(w.h.Sum(nil))
}

// fingerprinter writes length-prefixed fields, so that no two different
// sequences of fields hash alike.
type fingerprinter struct {
	h   hash.Hash
	buf [binary.MaxVarintLen64]byte
}

func (w *fingerprinter) num(n int) {
	w.h.Write(w.buf[:binary.PutVarint(w.buf[:], int64(n))])
}

func (w *fingerprinter) u64(n uint64) {
	w.h.Write(w.buf[:binary.PutUvarint(w.buf[:], n)])
}

func (w *fingerprinter) str(s string) {
	w.num(len(s))
	w.h.Write([]byte(s))
}

func (w *fingerprinter) strs(ss []string) {
	w.num(len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *fingerprinter) checkpoint(c *checkpoint.Checkpoint) {
	w.str(c.Variant)
	commit := ""
	if c.Hub != nil {
		commit = c.Hub.Commit
	}
	w.str(commit)
	if idx := c.Index; idx != nil {
		w.str("index " + idx.Name)
		if c.IndexErr != nil {
			w.str("unusable") // its message may name the path
		}
		if idx.TotalSize != nil {
			w.u64(*idx.TotalSize)
		}
		keys := slices.Sorted(maps.Keys(idx.WeightMap))
		w.num(len(keys))
		for _, k := range keys {
			w.str(k)
			w.str(idx.WeightMap[k])
		}
	}
	if cfg := c.Config; cfg != nil {
		w.str("config " + cfg.Name)
		if c.ConfigErr != nil {
			w.str("unusable")
		}
		keys := slices.Sorted(maps.Keys(cfg.Fields))
		w.num(len(keys))
		for _, k := range keys {
			w.str(k)
			w.str(string(cfg.Fields[k]))
		}
	}
	w.num(len(c.Shards))
	for _, s := range c.Shards {
		w.str(s.Name)
		missing, unsafe := "", ""
		switch s.Status {
		case checkpoint.ShardMissing, checkpoint.ShardDangling:
			missing = s.Reason
		case checkpoint.ShardUnsafe:
			unsafe = s.Reason
		}
		w.str(missing)
		w.str(unsafe)
		size := int64(-1)
		if h := s.Safetensors(); h != nil {
			size = h.Size
		}
		w.num(int(size))
		// In the hub cache the commit names the contents; elsewhere the
		// file's own version does.
		if commit == "" {
			w.str(s.Version)
		}
		if s.Err != nil {
			w.str(s.Err.Error()) // a format error: kind, tensor, offset; no path
		}
	}
	w.strs(c.Unreferenced)
	w.strs(c.Variants)
}

func (w *fingerprinter) mapped(m *Mapped) {
	v := m.View
	w.str(v.Adapter)
	w.str(strconv.FormatBool(v.Truncated))
	w.num(m.Unavailable)
	w.num(len(v.Tensors))
	for _, t := range v.Tensors {
		w.str(t.Name)
		w.str(t.DType.String())
		w.num(len(t.Shape))
		for _, d := range t.Shape {
			w.u64(d)
		}
		w.str(t.Source)
		w.str(t.Rule)
		w.num(len(t.Segments))
		for _, s := range t.Segments {
			src := m.Sources[s.Source]
			w.str(src.Shard.Name)
			w.str(src.Tensor.Name)
			w.u64(s.Offset)
			w.u64(s.Length)
		}
		w.quantized(m, t.Quant)
	}
	w.num(len(v.Dropped))
	for _, dr := range v.Dropped {
		w.strs([]string{dr.Name, dr.Reason, dr.Rule})
	}
	w.num(len(v.Errors))
	for _, e := range v.Errors {
		w.strs([]string{e.Name, e.Rule, e.Message})
	}
	w.num(len(v.Collisions))
	for _, c := range v.Collisions {
		w.str(c.Name)
		w.strs(c.Sources)
	}
	w.strs(v.Ignored)
}

// quantized writes a quantized weight's encoding: its codec, logical
// shape, and each companion as a logical tensor.
func (w *fingerprinter) quantized(m *Mapped, q *adapter.Quantized) {
	if q == nil {
		w.str("plain")
		return
	}
	w.str(q.Codec.String())
	w.num(len(q.Shape))
	for _, d := range q.Shape {
		w.u64(d)
	}
	w.strs(q.Parts)
	w.num(len(q.Companions))
	for _, c := range q.Companions {
		w.strs([]string{c.Name, c.DType.String()})
		w.num(len(c.Shape))
		for _, d := range c.Shape {
			w.u64(d)
		}
		for _, s := range c.Segments {
			src := m.Sources[s.Source]
			w.strs([]string{src.Shard.Name, src.Tensor.Name})
			w.u64(s.Offset)
			w.u64(s.Length)
		}
	}
}

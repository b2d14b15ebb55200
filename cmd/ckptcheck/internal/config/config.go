package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ckptcheck/ckptcheck/internal/miniyaml"
	"github.com/ckptcheck/ckptcheck/internal/wholefile"
	"github.com/ckptcheck/ckptcheck/verify"
)

// FileName is the configuration file looked for in the working directory.
const FileName = ".ckptcheck.yaml"

// Limit caps the file read: a configuration is a few kilobytes. A FIFO or
// a device named as the file is refused, never read.
var Limit = wholefile.Limit{Kind: "--config", Max: 1 << 20}

// A Schema lists the commands and their flags a file may set: command →
// flag name → whether the flag is repeatable (takes a list).
type Schema map[string]map[string]bool

// A File is a parsed configuration file.
type File struct {
	// Path is where it was read from.
	Path string
	// Flags holds flag defaults: command → flag → values (one for a plain
	// flag, any number for a repeatable one). The command "" holds the
	// `flags:` section, for every command that has the flag.
	Flags map[string]map[string][]string
	// Baseline holds the accepted findings.
	Baseline verify.Baseline
}

// Defaults returns the flag defaults for a command: its own section over
// the `flags:` section, restricted to the flags the command has.
func (f *File) Defaults(command string, has func(flag string) bool) map[string][]string {
	out := make(map[string][]string)
	for _, section := range []string{"", command} {
		for name, vals := range f.Flags[section] {
			if has(name) {
				out[name] = vals
			}
		}
	}
	return out
}

// Load reads and parses the file at path.
func Load(path string, schema Schema) (*File, error) {
	b, err := wholefile.ReadFile(path, Limit)
	if err != nil {
		return nil, err
	}
	return Parse(path, b, schema)
}

// Parse parses a configuration file's bytes; path names it in errors.
func Parse(path string, data []byte, schema Schema) (*File, error) {
	f := &File{Path: path, Flags: make(map[string]map[string][]string), Baseline: verify.Baseline{Source: path}}
	errf := func(n *miniyaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, n.Line, fmt.Sprintf(format, args...))
	}
	root, err := miniyaml.Parse(data)
	var perr *miniyaml.Error
	if errors.As(err, &perr) {
		return nil, fmt.Errorf("%s:%d: %s", path, perr.Line, perr.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if root == nil || root.Kind == miniyaml.Scalar && root.Null {
		return f, nil // empty: no settings
	}
	if root.Kind != miniyaml.Mapping {
		return nil, errf(root, "the file must be a mapping of sections (flags, baseline, or a command name)")
	}
	anyCommand := func(flag string) bool {
		for _, flags := range schema {
			if _, ok := flags[flag]; ok {
				return true
			}
		}
		return false
	}
	err = eachPair(root, errf, func(key string, k, v *miniyaml.Node) error {
		switch {
		case key == "baseline":
			return parseBaseline(v, errf, &f.Baseline)
		case key == "flags":
			flags, err := parseFlags(v, errf, "flags", func(flag string) (known, repeatable bool) {
				for _, fl := range schema {
					if r, ok := fl[flag]; ok {
						return true, r
					}
				}
				return false, false
			}, anyCommand)
			f.Flags[""] = flags
			return err
		case schema[key] != nil:
			flags, err := parseFlags(v, errf, key, func(flag string) (bool, bool) {
				r, ok := schema[key][flag]
				return ok, r
			}, anyCommand)
			f.Flags[key] = flags
			return err
		}
		return errf(k, "unknown section %q (want flags, baseline, or a command: %s)", key, strings.Join(commandNames(schema), ", "))
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func commandNames(schema Schema) []string {
	names := make([]string, 0, len(schema))
	for n := range schema {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

type errorf func(n *miniyaml.Node, format string, args ...any) error

// eachPair walks a mapping's keys, which must be plain strings, each once.
func eachPair(m *miniyaml.Node, errf errorf, fn func(key string, k, v *miniyaml.Node) error) error {
	seen := make(map[string]bool)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != miniyaml.Scalar || k.Null {
			return errf(k, "a key must be a plain name")
		}
		if seen[k.Value] {
			return errf(k, "%q is given twice", k.Value)
		}
		seen[k.Value] = true
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// parseFlags reads a section of flag: value pairs.
func parseFlags(m *miniyaml.Node, errf errorf, section string, lookup func(string) (known, repeatable bool), anyCommand func(string) bool) (map[string][]string, error) {
	out := make(map[string][]string)
	if m.Kind == miniyaml.Scalar && m.Null {
		return out, nil
	}
	if m.Kind != miniyaml.Mapping {
		return nil, errf(m, "%s: want a mapping of flag names to values", section)
	}
	err := eachPair(m, errf, func(name string, k, v *miniyaml.Node) error {
		name = strings.TrimLeft(name, "-")
		known, repeatable := lookup(name)
		switch {
		case name == "config" || name == "help":
			return errf(k, "%s: --%s cannot be set in the configuration file", section, name)
		case !known && anyCommand(name):
			return errf(k, "%s: the %s command has no --%s flag", section, section, name)
		case !known:
			return errf(k, "%s: unknown flag %q", section, name)
		}
		switch v.Kind {
		case miniyaml.Scalar:
			if v.Null {
				return errf(v, "%s: --%s has no value", section, name)
			}
			out[name] = []string{v.Value}
		case miniyaml.Sequence:
			if !repeatable {
				return errf(v, "%s: --%s takes one value, not a list", section, name)
			}
			for _, item := range v.Content {
				if item.Kind != miniyaml.Scalar || item.Null {
					return errf(item, "%s: --%s: each item must be a single value", section, name)
				}
				out[name] = append(out[name], item.Value)
			}
		default:
			return errf(v, "%s: --%s: want a value or a list of values", section, name)
		}
		return nil
	})
	return out, err
}

// parseBaseline reads the baseline: a list of {code, key, file, side,
// reason}.
func parseBaseline(n *miniyaml.Node, errf errorf, b *verify.Baseline) error {
	if n.Kind == miniyaml.Scalar && n.Null {
		return nil
	}
	if n.Kind != miniyaml.Sequence {
		return errf(n, "baseline: want a list of entries (- code: ..., key: ..., reason: ...)")
	}
	for i, item := range n.Content {
		if item.Kind != miniyaml.Mapping {
			return errf(item, "baseline[%d]: want a mapping with code, key, file, side and reason", i)
		}
		fields := make(map[string]string)
		err := eachPair(item, errf, func(key string, k, v *miniyaml.Node) error {
			switch key {
			case "code", "key", "file", "side", "reason":
			default:
				return errf(k, "baseline[%d]: unknown key %q (want code, key, file, side, reason)", i, key)
			}
			if v.Kind != miniyaml.Scalar || v.Null {
				return errf(v, "baseline[%d]: %s must be a single value", i, key)
			}
			fields[key] = v.Value
			return nil
		})
		if err != nil {
			return err
		}
		if fields["code"] == "" {
			return errf(item, "baseline[%d]: no code", i)
		}
		a, err := verify.NewAccepted(verify.Code(fields["code"]), fields["key"], fields["file"], verify.Side(fields["side"]), strings.TrimSpace(fields["reason"]))
		if err != nil {
			return errf(item, "baseline[%d]: %v", i, err)
		}
		b.Accepted = append(b.Accepted, a)
	}
	return nil
}

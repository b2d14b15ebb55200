// Package miniyaml reads the part of YAML that configuration files use
// into nodes with line numbers: one document of block mappings and
// sequences, flow collections ([a, b], {k: v}), plain, single- and
// double-quoted scalars, literal and folded block scalars (| and >, with
// - and + chomping), and comments.
//
// What a configuration needs no part of is refused with a line-numbered
// error, never guessed at: anchors and aliases, tags, directives,
// explicit keys (?), complex keys, several documents, block scalars with
// an explicit indentation digit. Where it accepts a file, it reads it as
// go.yaml.in/yaml/v3 does (checked by tools/crosscheck's fuzz target).
//
// It exists because a YAML library's package initialisation (its
// resolution tables and regular expressions) ran in every invocation of
// the binary, which must start in well under a millisecond; this package
// has no init at all. Nesting is bounded, so no input can exhaust the
// stack.
package miniyaml

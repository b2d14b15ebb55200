// Package config reads ckptcheck's configuration file, .ckptcheck.yaml in
// the working directory (or the file --config names): flag defaults, for
// every command or per command, and a baseline of accepted findings. Teams
// keep it in the repository instead of in command lines.
//
//	# defaults for every command that has the flag
//	flags:
//	  fail-on: warning
//	# defaults for one command; a list for a repeatable flag
//	diff:
//	  adapter: [exported=torchtitan-hf]
//	  values: true
//	# accepted findings: reported as suppressed, not counted
//	baseline:
//	  - code: dtype_mismatch
//	    key: "model.layers.*"
//	    reason: torchtitan exports F32; converted at upload
//
// The file is read by internal/miniyaml (YAML's configuration subset,
// with no package init). Decoding is strict: an unknown key, command or flag, a missing reason or
// an unknown finding code is an error naming it and its line. Flags given on
// the command line win over the file's.
package config

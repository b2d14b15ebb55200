// Command wheel zips the release binaries make dist built into Python
// wheels, one per platform and architecture, so that `pip install` (and
// uvx, pipx) puts the ckptcheck command on PATH and the ckptcheck Python
// package beside it. It builds nothing: the binaries stay the byte-identical
// ones SHA256SUMS lists.
//
// A wheel (PEP 427, PEP 491) is a zip holding the package, the binary under
// ckptcheck-VERSION.data/scripts/ (where pip installs scripts), and the
// dist-info directory: METADATA (core metadata 2.1), WHEEL and RECORD (every
// file's sha256 in URL-safe base64 without padding, and its size). Entries
// are sorted and carry a fixed time and fixed modes, so the same inputs
// give the same bytes.
//
//	go -C tools run ./wheel -dist DIR -out DIR -python DIR -readme FILE -version DESCRIBE -commits N
package main

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/ckptcheck/ckptcheck/cmd/ckptcheck/internal/config"
	"github.com/ckptcheck/ckptcheck/internal/wholefile"
)

// The files the command reads whole, each capped (the README lists the
// caps): a FIFO, a device or a file over its cap is a clear error, never a
// hang or an allocation sized by the file.
var (
	// Rules in the rule language: the presets are about 5 KB.
	adapterFileLimit = wholefile.Limit{Kind: "--adapter-file", Max: 1 << 20}
	// A JSON policy; the decoder reads no more than this either.
	policyLimit = wholefile.Limit{Kind: "--policy", Max: 16 << 20}
	// A manifest of a 600B-parameter MoE model is a few hundred MB; the
	// decoder reads no more than this either.
	manifestLimit = wholefile.Limit{Kind: "--manifest", Max: 1 << 30}
	// A report or a partial manifest: as large as a manifest.
	mergeInputLimit = wholefile.Limit{Kind: "merge input", Max: 1 << 30}
)

// flagFileLimits caps the files flags name, by flag, for the fingerprint's
// digests of their contents.
var flagFileLimits = map[string]wholefile.Limit{
	"adapter-file": adapterFileLimit,
	"policy":       policyLimit,
	"manifest":     manifestLimit,
	"config":       config.Limit,
}

// fileDigest is the SHA-256 of the file a flag names, read under the flag's
// cap (or the largest cap for a flag without one).
func fileDigest(flag, path string) (string, error) {
	limit, ok := flagFileLimits[flag]
	if !ok {
		limit = wholefile.Limit{Kind: "--" + flag, Max: manifestLimit.Max}
	}
	r, err := wholefile.Open(path, limit)
	if err != nil {
		return "", err
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

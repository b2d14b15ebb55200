// Package sarifschema holds no code: its test validates ckptcheck's SARIF
// output against the SARIF 2.1.0 JSON Schema from the shared folder. The
// JSON Schema validator is a test dependency only, so it lives in the tools
// module, never in the main go.mod.
package sarifschema

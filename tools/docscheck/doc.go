// Package docscheck holds no code: its tests check the guides in docs/
// against the systems they describe (the Kubernetes API's types, ckptcheck's
// own partition rules), so that a guide cannot drift into something that
// does not run. Its heavy dependencies (k8s.io/api) are test-only: no
// binary links them.
package docscheck

// Package verify holds every judgement ckptcheck makes about checkpoints:
// format validation, index and config consistency, and the structural diff
// of a published checkpoint against an exported one. Checks are functions
// that return Findings; a Report gathers them with the inputs and decides
// the verdict. Printing a report is separate from deciding it.
//
// Finding codes are stable and documented in Codes.
package verify

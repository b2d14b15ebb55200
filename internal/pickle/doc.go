// Package pickle reads Python pickles (protocols 2 to 5) without running
// them: a virtual machine whose opcodes build inert values and never import
// or call anything.
//
// GLOBAL and STACK_GLOBAL resolve only the names an allow-list the caller
// gives accepts, and yield a Global; REDUCE and NEWOBJ yield a *Call of it;
// BUILD, SETITEM(S) and APPEND(S) on a *Call record the state and items on
// it. Any other name — posix.system, builtins.eval — INST, OBJ, the
// extension registry and unknown opcodes are an *Error of kind Unsafe
// naming what was refused, and nothing after it is read.
//
// Work is bounded by the input: every length is checked against the bytes
// present before anything is allocated, and the values built are a graph
// whose size grows with the opcodes executed (a reference from the memo is
// shared, never copied), so a 1 KB pickle cannot build a large structure.
// Walkers of the result must still treat it as a graph: a memo reference
// repeated, or a list appended to itself, makes a tree walk exponential or
// endless (see Limits.Budget for a budget to share).
package pickle

package values

// Knobs for the tests and benchmarks of the engine's callers, which go
// through their own public API: small blocks make small tensors span many,
// and the portable loops are compared with the vector ones. Set them only
// while no Run is under way.

// SetBlocking sets the elements a block holds and the bytes a transposed
// side's tile may take (0 keeps the current value), and returns a function
// that restores both.
func SetBlocking(elems, tile uint64) (restore func()) {
	oldElems, oldTile := blockElems, tileBytes
	if elems > 0 {
		blockElems = elems
	}
	if tile > 0 {
		tileBytes = tile
	}
	return func() { blockElems, tileBytes = oldElems, oldTile }
}

// UseKernels chooses the portable Go loops only, or the default (the
// vector loops where the CPU has them), and returns a function that
// restores the choice.
func UseKernels(portable bool) (restore func()) {
	old := kernelChoice
	kernelChoice = kernelsAuto
	if portable {
		kernelChoice = kernelsPortable
	}
	return func() { kernelChoice = old }
}

// Package safetensors reads and writes the safetensors file format.
//
// The reader follows the reference implementation (the Rust safetensors
// crate, 0.8) rule for rule: a file it rejects is rejected here with the same
// error kind (see ErrorKind), and a file it accepts opens here too. Only the
// 8-byte length and the JSON header are read when a file is opened; a
// tensor's bytes are read through its own handle, (*Tensor).Open, which never
// reaches outside the file's data section. Nothing read from the file sizes
// an allocation beyond the header itself, which is at most MaxHeaderSize
// bytes and never more than the file holds.
//
// Like debug/elf, NewFile reads from any io.ReaderAt, returns a nil *File
// whenever it returns an error, and Open is the convenience for a named
// file. ReadHeader is for tools that report on damaged files: it returns
// the header of a file whose layout is wrong, with CheckLayout saying what
// is wrong and Trailing counting bytes after the last tensor (a file the
// reference refuses whose tensors are whole). A Writer writes files in the official
// writer's layout. The package knows the format only: indexes, configs and
// where files come from are package checkpoint's.
package safetensors

// Package tensorfile holds what every tensor file format shares: the tensor
// info (TensorInfo: name, dtype, row-major shape, absolute byte range), the
// dtype table (DType: names, bit sizes including the sub-byte F4 and F6
// types, torch aliases) and the geometry of block encodings (Encoding,
// Block), the File and Format interfaces, and a registry of formats.
//
// Like image.RegisterFormat, a format package registers itself when it is
// linked (package safetensors does in its init), and callers never switch
// on file names or magic numbers: ByFileName answers for a name whose suffix
// says what the file is, Detect sniffs the first bytes, and Identify applies
// the rule between them. A file whose name says its format is read as that
// format even when its bytes disagree, so that a damaged model.safetensors
// gets the safetensors reader's error rather than "unknown format";
// sniffing decides only where nothing names the format.
//
// The package is a leaf: formats import it, it imports no format.
package tensorfile

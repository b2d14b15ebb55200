// Package torchsave reads the files torch.save writes (pytorch_model.bin,
// .pt, .pth) without running them: the zip archive of torch 1.6 and later
// and the legacy format before it.
//
// A zip archive is read with archive/zip over the io.ReaderAt, so a remote
// file is read by ranges: its central directory, data.pkl, and each
// storage entry's local header; never the storages themselves. A file
// that offers ReadAtDirect (a remote one) is read through it while the
// archive is opened, so that the local headers, spread through the file,
// are not taken for a stream and read ahead. data.pkl is run by package
// internal/pickle's VM, which executes nothing and allows only the globals
// of torch's own weights_only unpickler (see Allowed): anything else is an
// UnsafePickle error naming the global, and the file is not read further.
//
// Each tensor is a strided view of a storage (torch._utils.
// _rebuild_tensor_v2(storage, offset, size, stride, …), offsets and sizes
// in elements). A contiguous view is one byte range of the file, its
// TensorInfo's Offset and Size; tied weights are two tensors over the same
// bytes. A transposed view is its storage's range marked Transposed; any
// other strided view (a column slice, a permute, a stride-0 expand) is
// its Pieces in row-major order, with Offset -1. A tensor kind the package
// does not read (sparse, quantized) is listed with its name, dtype and
// shape, Offset -1 and Size 0, and its reason from (*File).TensorError, so
// that no caller reads the wrong bytes for it.
//
// A DCP step directory (torch.distributed.checkpoint) is its .metadata,
// read by ReadDCPMetadata with the same VM and DCPAllowed's globals, and
// item files whose chunks DCPItems reads: a torch.save archive an item, or
// an entry of a rank file's safetensors blob (FileSystemWriter's
// serialization_format=SAFETENSORS). DCPModelFiles assembles the model
// tensors from their chunks.
//
// Like debug/elf, NewFile reads any io.ReaderAt, returns a nil *File
// whenever it returns an error, and errors are *FormatError values with a
// stable Kind (torch_bad_archive, unsafe_pickle, …). The package registers
// itself with tensorfile as format "torch" for .bin, .pt and .pth.
package torchsave

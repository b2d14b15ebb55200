package checkpoint

import (
	"errors"
	"fmt"
	"io"

	"github.com/ckptcheck/ckptcheck/safetensors"
	"github.com/ckptcheck/ckptcheck/tensorfile"
)

// A ShardStatus says what opening a shard found.
type ShardStatus uint8

const (
	// ShardOK: the file is open and valid.
	ShardOK ShardStatus = iota
	// ShardMissing: there is no such file (the index names one that does
	// not exist, or it disappeared while it was opened). Reason says which.
	ShardMissing
	// ShardDangling: the file is a symlink that points at nothing (in a
	// hub cache, an interrupted download). Reason says which.
	ShardDangling
	// ShardUnsafe: the index's name for it is not a safe name of a tensor
	// file (see UnsafeName), so it was never opened. Reason says why.
	ShardUnsafe
	// ShardInvalid: the file breaks its format (Err): its header did not
	// parse, or its layout is wrong. Its tensors cannot be read; Header is
	// set when the header parsed.
	ShardInvalid
	// ShardTrailing: the file's only fault is bytes after its last tensor
	// (Err, metadata_incomplete_buffer for safetensors): every tensor is
	// whole, and File reads them.
	ShardTrailing
)

var statusNames = [...]string{
	ShardOK:       "ok",
	ShardMissing:  "missing",
	ShardDangling: "dangling",
	ShardUnsafe:   "unsafe",
	ShardInvalid:  "invalid",
	ShardTrailing: "trailing",
}

func (s ShardStatus) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("ShardStatus(%d)", uint8(s))
}

// Absent reports whether the shard was not opened at all: missing,
// dangling or refused.
func (s ShardStatus) Absent() bool {
	return s == ShardMissing || s == ShardDangling || s == ShardUnsafe
}

// A Shard is one file of a checkpoint.
type Shard struct {
	// Name is the file's name in the checkpoint (as the index names it,
	// cleaned); Path is how reports name it.
	Name, Path string
	// Status is what opening the file found.
	Status ShardStatus
	// Reason says, for messages, why a shard is ShardMissing, ShardDangling
	// or ShardUnsafe ("the index names it, but there is no such file").
	Reason string
	// Err is the file's format error when it is ShardInvalid or
	// ShardTrailing: for safetensors a *safetensors.FormatError with the
	// reference's kind.
	Err error
	// File is the open file, whose tensors can be read: set when the shard
	// is ShardOK or ShardTrailing, nil otherwise.
	File tensorfile.File
	// Header is the file as its header describes it: File when there is
	// one, else, for a ShardInvalid file whose header parsed but whose
	// layout is wrong, its tensors as written (not to be read). Callers
	// that need a format's specifics assert its type:
	//
	//	if h, ok := s.Header.(*safetensors.File); ok { … h.Duplicates … }
	Header tensorfile.File
	// Data reads the file's bytes, set when File is: a format's
	// TensorInfo offsets are absolute offsets into it.
	Data io.ReaderAt
	// Format is the file's format, nil when it was not opened.
	Format tensorfile.Format
	// Version is the opened file's version when its source tells it (see
	// Versioned): "mtime …" for a local file.
	Version string
}

// Safetensors is the shard's header as a *safetensors.File: nil when the
// header did not parse, the shard was not opened, or it is of another
// format.
func (s *Shard) Safetensors() *safetensors.File {
	h, _ := s.Header.(*safetensors.File)
	return h
}

// formatOf is the format a shard's name says; a name no registered format
// claims (a single file given by any name) is read as safetensors, the
// default format, whose strict reader says what is wrong with it.
func formatOf(name string) tensorfile.Format {
	if f, ok := tensorfile.ByFileName(name); ok {
		return f
	}
	f, _ := tensorfile.Lookup(safetensors.Name)
	return f
}

// readHeader opens the shard's file r of size bytes in its format, and
// sets Status, Err, File and Header. It returns an error only when the
// header could not be read (I/O): a finding is recorded, not returned.
func (s *Shard) readHeader(r io.ReaderAt, size int64) error {
	s.Format = formatOf(s.Name)
	if s.Format.Name() != safetensors.Name {
		f, err := s.Format.Open(r, size)
		if err != nil {
			s.Status, s.Err = ShardInvalid, err
			return nil
		}
		s.Status, s.File, s.Header, s.Data = ShardOK, f, f, r
		return nil
	}
	// Safetensors is read leniently, so that checks see the tensors of a
	// file with a wrong layout and read those of a file with trailing bytes.
	h, err := safetensors.ReadHeader(r, size)
	var fe *safetensors.FormatError
	switch {
	case err != nil && !errors.As(err, &fe):
		return err
	case err != nil:
		s.Status, s.Err = ShardInvalid, err
	case h.CheckLayout() == nil:
		s.Status, s.File, s.Header, s.Data = ShardOK, h, h, r
	case h.Trailing() > 0:
		s.Status, s.Err, s.File, s.Header, s.Data = ShardTrailing, h.CheckLayout(), h, h, r
	default:
		s.Status, s.Err, s.Header = ShardInvalid, h.CheckLayout(), h
	}
	return nil
}

// Package wholefile opens a file the tool reads whole — a configuration, a
// policy, an adapter, a manifest, a merge part, a hub-cache ref — so that no
// path can hang the process or exhaust its memory.
//
// Only regular files are read: a named pipe, a device, a socket or a
// directory is refused with an error naming the path and what it is (the
// path is looked at before it is opened, and the opened file again after).
// On Unix the open uses O_NONBLOCK, so a FIFO swapped in between cannot
// block it. Each kind of file has a size cap, checked against the file's
// size before reading and enforced while reading, so a file that grows, or
// reports no size, is cut off at the cap plus one byte. Nothing is
// allocated beyond the smaller of the file's size and the cap (plus the
// growth a longer read needs, never past the cap).
package wholefile

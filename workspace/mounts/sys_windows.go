package mounts

import "io/fs"

// noFollow is 0: Windows has no open flag that refuses a symbolic link.
const noFollow = 0

// fileOwner returns nobody's ids: Windows files have no uid, and the
// containers run as nobody unless --user says otherwise.
func fileOwner(fs.FileInfo) (uid, gid int) { return 65534, 65534 }

// syncDir does nothing: Windows flushes a rename's directory with the file,
// and a directory handle cannot be flushed.
func syncDir(string) error { return nil }

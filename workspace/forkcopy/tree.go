package forkcopy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Tree copies the directory tree src to dst, which must not exist:
// directories, regular files (with setuid, setgid and sticky bits),
// symlinks as links, fifos, overlay whiteouts (0:0 character devices) and
// extended attributes; with owners when this process may set them (root),
// else owned by it. Hard links come out as separate files. A file that
// changes while it is copied (a command writing it) is copied again, up to
// maxRereads times, so that no copy is half of one write and half of the
// next as far as its size and times tell; sockets and other devices are
// left out.
func Tree(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", src)
	}
	var dirs []string // their modes are set last, once their entries are in
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.Mkdir(to, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, rel)
		case mode.IsRegular():
			if err := copyFile(path, to, info); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		default:
			if ok, err := copySpecial(path, to, info); err != nil || !ok {
				return err
			}
		}
		return copyMeta(path, to, info)
	})
	if err != nil {
		return fmt.Errorf("copying the workspace's files: %w", err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		info, err := os.Lstat(filepath.Join(src, dirs[i]))
		if err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dst, dirs[i]), info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the regular file path, whose state was info, to to,
// again when it changed while it was copied.
func copyFile(path, to string, info fs.FileInfo) error {
	for try := 0; ; try++ {
		if err := copyOnce(path, to, info.Size()); err != nil {
			return err
		}
		after, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if same(info, after) {
			return nil
		}
		if try == maxRereads {
			return fmt.Errorf("%s changed each of the %d times it was copied (a command is writing it); fork when it is done", path, maxRereads+1)
		}
		if err := os.Remove(to); err != nil {
			return err
		}
		info = after
	}
}

// copyOnce copies size bytes of path to a new file to.
func copyOnce(path, to string, size int64) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = copyExtents(in, out, size)
	if err == nil {
		err = out.Truncate(size)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// same reports whether a file's size and times are unchanged; a change
// within the filesystem's timestamp tick is seen by the ctime of the
// metadata the write updated.
func same(a, b fs.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && changeTime(a).Equal(changeTime(b))
}

// zeroTime stands for a change time a platform does not give.
var zeroTime time.Time

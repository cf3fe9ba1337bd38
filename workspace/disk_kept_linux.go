package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/workspace/disk"
)

// mountKeptDisks mounts, read-only, the disk image of every session kept
// under cacheDir whose directory is not mounted (its session ended), and
// of every handed-over workspace kept for its export that no session has
// open. It returns the directories it mounted and, by session directory,
// why a disk could not be. Without root it mounts nothing.
func mountKeptDisks(cacheDir string) (mounted []string, failed map[string]error) {
	images, _ := filepath.Glob(filepath.Join(cacheDir, instancesDir, "*", disksDir, "*.img"))
	dirs := map[string]string{}
	for _, image := range images {
		hash := strings.TrimSuffix(filepath.Base(image), ".img")
		dirs[image] = filepath.Join(filepath.Dir(filepath.Dir(image)), sessionsDir, hash)
	}
	for dir, image := range exportableKept(cacheDir) {
		// One a session has open is its own to mount: mounting its image
		// twice would make two filesystems of one disk.
		alive, err := probeLock(filepath.Join(filepath.Dir(dir), lockFile))
		if _, statErr := os.Stat(image); err == nil && !alive && statErr == nil {
			dirs[image] = dir
		}
	}
	if len(dirs) == 0 || os.Geteuid() != 0 {
		return nil, nil
	}
	points, err := disk.MountPoints()
	if err != nil {
		return nil, nil
	}
	isMounted := map[string]bool{}
	for _, p := range points {
		isMounted[p] = true
	}
	t, haveMount := disk.MountTool()
	failed = map[string]error{}
	for image, dir := range dirs {
		if isMounted[dir] {
			continue
		}
		if !haveMount {
			failed[dir] = errors.New("its disk image needs the mount program, which is not on $PATH or in /usr/sbin or /sbin")
			continue
		}
		if err := t.MountReadOnly(image, dir); err != nil {
			failed[dir] = fmt.Errorf("its disk image %s could not be mounted to be read: %w", image, err)
			continue
		}
		mounted = append(mounted, dir)
	}
	return mounted, failed
}

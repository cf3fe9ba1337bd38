package mounts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
)

// EachFolder calls f with the changes of each mounted folder of infos, in
// the session directory sessionDir, that can change, keeping those under
// prefix (a workspace path, "" for all). A copy kept on the Podman host
// must have been brought back before.
func EachFolder(ctx context.Context, sessionDir string, infos []Info, prefix string, f func(Info, *changes.Folder, []changes.Change) error) error {
	for _, mi := range infos {
		if prefix != "" && !Overlaps(mi.Path, prefix) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		folder, err := OpenFolder(sessionDir, mi)
		if err != nil {
			return err
		}
		if folder == nil {
			continue // read-only, or not made yet: the mounts after it may have changed
		}
		list, err := folder.Changes(ctx)
		if err == nil {
			list = changesUnder(list, mi.Path, prefix)
			if len(list) > 0 {
				err = f(mi, folder, list)
			}
		}
		folder.Close()
		if err != nil {
			return fmt.Errorf("reading the changes to /workspace/%s: %w", mi.Path, err)
		}
	}
	return nil
}

// changesUnder keeps the changes whose workspace path is prefix or inside
// it, and the groups whose directory holds prefix.
func changesUnder(list []changes.Change, mountPath, prefix string) []changes.Change {
	if prefix == "" || prefix == mountPath || strings.HasPrefix(mountPath, prefix+"/") {
		return list
	}
	var out []changes.Change
	for _, c := range list {
		p := strings.TrimSuffix(mountPath+"/"+c.Path, "/")
		if p == prefix || strings.HasPrefix(p, prefix+"/") || (c.Group != nil && strings.HasPrefix(prefix, p+"/")) {
			out = append(out, c)
		}
	}
	return out
}

// OpenFolder opens a mount of the session in sessionDir for comparison;
// it returns nil for a read-only mount, or one whose session files do not
// exist yet: neither can have changed.
func OpenFolder(sessionDir string, mi Info) (*changes.Folder, error) {
	dir := filepath.Join(sessionDir, mi.Dir)
	var f *changes.Folder
	var err error
	switch mi.Mode {
	case Overlay:
		markers, perr := changes.ParseMarkers(string(mi.Overlay))
		if perr != nil {
			return nil, perr
		}
		f, err = changes.OpenOverlay(mi.HostPath, filepath.Join(dir, "upper"), markers)
	case Copy:
		f, err = changes.OpenCopy(filepath.Join(dir, "base"), filepath.Join(sessionDir, "workspace"), mi.Path)
	default:
		return nil, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if f != nil {
		f.IncludeIgnored = mi.ExportIgnored
	}
	return f, err
}

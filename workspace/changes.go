package workspace

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// Limits of the views of a session's changes.
const (
	// DiffTextLimit is the largest file a diff shows as text.
	DiffTextLimit = 1 << 20
	// MaxDiffBytes bounds a whole diff; past it the diff stops, saying so.
	MaxDiffBytes = 16 << 20
)

// FolderChange is one path a session created, modified or deleted in a
// host folder mounted in its workspace.
type FolderChange struct {
	// Path is the workspace path.
	Path string
	// Status is created, modified or deleted.
	Status changes.Status
	// Kind is file, symlink or other (the session's, or the host's when deleted).
	Kind changes.Kind
	// Size is the session's size in bytes, or the host's when deleted.
	Size int64
	// OldSize is the host's size when modified.
	OldSize int64
	// LeftOut says why a patch would leave the change out, "" if it would not.
	LeftOut string
	// Files, for a directory (KindDir) that stands for many paths a patch
	// leaves out, counts them (a lower bound past changes.MaxCounted);
	// Size is then their total.
	Files int
}

// DiffResult is a unified diff of a session's changes.
type DiffResult struct {
	// Text is the diff, in git's format, with workspace paths.
	Text string
	// Truncated is true when the diff passed MaxDiffBytes and stops there.
	Truncated bool
}

// Changes lists what the session changed in its mounted host folders
// (whose host copies never change), under prefix ("" for all): the changes
// of every folder, then the groups of paths patches leave out (ignored
// directories, .git), one entry each.
func (s *Session) Changes(ctx context.Context, prefix string) ([]FolderChange, error) {
	var out, groups []FolderChange
	err := s.eachFolder(ctx, prefix, func(mi MountInfo, f *changes.Folder, list []changes.Change) error {
		for _, c := range list {
			fc := FolderChange{Path: mi.Path + "/" + c.Path, Status: c.Status(), LeftOut: c.LeftOut()}
			switch {
			case c.Group != nil:
				fc.Path = strings.TrimSuffix(fc.Path, "/") + "/"
				fc.Kind, fc.Size, fc.Files = changes.KindDir, c.Group.Bytes, c.Group.Files
				groups = append(groups, fc)
				continue
			case c.New == nil:
				fc.Kind, fc.Size = c.Old.Kind, c.Old.Size
			case c.Old == nil:
				fc.Kind, fc.Size = c.New.Kind, c.New.Size
			default:
				fc.Kind, fc.Size, fc.OldSize = c.New.Kind, c.New.Size, c.Old.Size
			}
			out = append(out, fc)
		}
		return nil
	})
	return append(out, groups...), err
}

// Diff is Changes as a unified diff, binary files listed, not shown:
// every folder's changes, then the lines naming what the diff leaves out.
func (s *Session) Diff(ctx context.Context, prefix string) (DiffResult, error) {
	w := &cappedBuffer{limit: MaxDiffBytes}
	var left []string
	err := s.eachFolder(ctx, prefix, func(mi MountInfo, f *changes.Folder, list []changes.Change) error {
		l, err := f.WritePatch(ctx, w, list, changes.PatchOptions{TextLimit: DiffTextLimit, Prefix: mi.Path + "/", DeferLeftOut: true})
		left = append(left, l...)
		return err
	})
	if err == nil {
		err = changes.WriteLeftOut(w, left)
	}
	if errors.Is(err, errDiffFull) {
		return DiffResult{Text: w.String(), Truncated: true}, nil
	}
	return DiffResult{Text: w.String()}, err
}

// eachFolder calls f with the changes of each mounted folder that can
// change, keeping those under prefix (a workspace path, "" for all).
func (s *Session) eachFolder(ctx context.Context, prefix string, f func(MountInfo, *changes.Folder, []changes.Change) error) error {
	defer s.enter()()
	isCopy := func(mi MountInfo) bool { return mi.Mode == MountCopy }
	if s.m.cfg.FilesOnEngineHost && slices.ContainsFunc(s.Info().Mounts, isCopy) {
		done, err := s.mounts.pullCopies(ctx)
		if err != nil {
			return err
		}
		defer done()
	}
	return mounts.EachFolder(ctx, s.dir, s.Info().Mounts, prefix, f)
}

// errDiffFull is returned by cappedBuffer once its limit is reached.
var errDiffFull = errors.New("diff limit reached")

// cappedBuffer keeps up to limit bytes, cut at a line's end, then refuses more.
type cappedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		if cut := bytes.LastIndexByte(p[:max(room, 0)], '\n'); cut >= 0 {
			b.Buffer.Write(p[:cut+1])
		}
		return 0, errDiffFull
	}
	return b.Buffer.Write(p)
}

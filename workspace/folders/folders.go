// Package folders shows what a session changed in the host folders
// mounted in its workspace, whose host copies themselves never change: a
// list of the changes and a unified diff of them, the part of a session's
// workspace the workspace_changes and workspace_diff tools take
// (tools.FolderChanges).
//
// A Part reaches its session only through its Deps, never by importing
// workspace. It has no state and no lock of its own: the session's pullMu,
// taken by Deps.PullCopies, orders a read of the changes against what
// deletes the files.
package folders

import (
	"context"
	"io"
	"slices"
	"strings"

	"github.com/wink-mcp/wink-mcp/changes"
	"github.com/wink-mcp/wink-mcp/workspace/difftext"
	"github.com/wink-mcp/wink-mcp/workspace/mounts"
)

// Change is one path a session created, modified or deleted in a host
// folder mounted in its workspace.
type Change struct {
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

// Deps is what a Part needs of its session.
type Deps struct {
	// Enter marks a tool's call as in progress and returns the function
	// that ends it: the session's idle reaper never removes a container
	// while one is.
	Enter func() (leave func())
	// Mounts are the host folders in the session's workspace, known once
	// its first container has been made.
	Mounts func() []mounts.Info
	// Dir is the session directory, which holds the folders' copies.
	Dir func() string
	// PullCopies, when the copies live on the Podman host
	// (Config.FilesOnEngineHost), brings them back for a read of the
	// changes; done ends the read, which no other may overlap. It is nil
	// when the copies are on this machine.
	PullCopies func(ctx context.Context) (done func(), err error)
}

// Part is what a session changed in its mounted host folders. It is safe
// for concurrent use.
type Part struct{ d Deps }

// New returns a session's folder changes.
func New(d Deps) *Part { return &Part{d: d} }

// Mounts describes the host folders in the session's workspace.
func (p *Part) Mounts() []mounts.Info { return p.d.Mounts() }

// Changes lists what the session changed in its mounted host folders
// (whose host copies never change), under prefix ("" for all): the changes
// of every folder, then the groups of paths patches leave out (ignored
// directories, .git), one entry each.
func (p *Part) Changes(ctx context.Context, prefix string) ([]Change, error) {
	var out, groups []Change
	err := p.eachFolder(ctx, prefix, func(mi mounts.Info, f *changes.Folder, list []changes.Change) error {
		for _, c := range list {
			fc := Change{Path: mi.Path + "/" + c.Path, Status: c.Status(), LeftOut: c.LeftOut()}
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

// Diff is Changes as a unified diff of at most difftext.MaxBytes, binary
// files listed, not shown: every folder's changes, then the lines naming
// what the diff leaves out.
func (p *Part) Diff(ctx context.Context, prefix string) (difftext.Result, error) {
	return difftext.Capped(func(w io.Writer) error {
		var left []string
		err := p.eachFolder(ctx, prefix, func(mi mounts.Info, f *changes.Folder, list []changes.Change) error {
			l, err := f.WritePatch(ctx, w, list, changes.PatchOptions{TextLimit: difftext.TextLimit, Prefix: mi.Path + "/", DeferLeftOut: true})
			left = append(left, l...)
			return err
		})
		if err == nil {
			err = changes.WriteLeftOut(w, left)
		}
		return err
	})
}

// eachFolder calls f with the changes of each mounted folder that can
// change, keeping those under prefix (a workspace path, "" for all).
func (p *Part) eachFolder(ctx context.Context, prefix string, f func(mounts.Info, *changes.Folder, []changes.Change) error) error {
	defer p.d.Enter()()
	isCopy := func(mi mounts.Info) bool { return mi.Mode == mounts.Copy }
	if p.d.PullCopies != nil && slices.ContainsFunc(p.d.Mounts(), isCopy) {
		done, err := p.d.PullCopies(ctx)
		if err != nil {
			return err
		}
		defer done()
	}
	return mounts.EachFolder(ctx, p.d.Dir(), p.d.Mounts(), prefix, f)
}

package server

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/wink-mcp/wink-mcp/wspath"
)

// The resources of a workspace handle (MCP revision 2026-07-28) are named
// by the handle's reference, not by the handle: a URI travels where a
// capability must not (notifications, a client's resource list, an
// HTTP header mirroring it), and a reference alone opens nothing: the
// request must also come from the handle's principal, exactly as a tool
// call with the handle.
const (
	// handleResourcesPrefix begins every resource URI of a handle.
	handleResourcesPrefix = "wink://workspace/"
	// refPrefix begins a handle's reference, which follows
	// handleResourcesPrefix, so a 2025 URI (".../files/", ".../snapshot")
	// is never one.
	refPrefix = "wsr_"
	// refBytes is how much of the handle's SHA-256 a reference keeps.
	refBytes = 16
	// HandleFilesTemplate names any file of a handle's workspace, the
	// workspace variable being the reference workspace_open returns.
	HandleFilesTemplate = handleResourcesPrefix + "{workspace}/files/{+path}"
	// HandleSnapshotTemplate names a handle's snapshot of touched files.
	HandleSnapshotTemplate = handleResourcesPrefix + "{workspace}/snapshot"
	// HandleDigestTemplate names a handle's workspace digest.
	HandleDigestTemplate = handleResourcesPrefix + "{workspace}/digest"
	// maxHandleURI is the longest handle resource URI read: the prefix,
	// a reference, "/files/" and a path of wspath.MaxLength characters
	// each escaped as %XX.
	maxHandleURI = len(handleResourcesPrefix) + len(refPrefix) + 22 + len("/files/") + 3*wspath.MaxLength
)

// refLength is the length of a reference: its prefix and refBytes in
// unpadded base64url.
var refLength = len(refPrefix) + base64.RawURLEncoding.EncodedLen(refBytes)

// refOf returns the reference of a handle: a digest, so that knowing it
// never gives the handle back.
func refOf(handle string) string {
	sum := sha256.Sum256([]byte("wink-mcp resource reference\x00" + handle))
	return refPrefix + base64.RawURLEncoding.EncodeToString(sum[:refBytes])
}

// handleResource is one resource of a handle's workspace: its snapshot,
// its digest, or one of its files.
type handleResource struct {
	ref    string
	file   bool   // a file; false for the snapshot or the digest
	digest bool   // the workspace digest
	path   string // the file's clean path under /workspace
}

// uri returns the resource's canonical URI, each segment of its path
// %-escaped, so that parseHandleURI gives back exactly this path.
func (r handleResource) uri() string {
	if r.digest {
		return handleResourcesPrefix + r.ref + "/digest"
	}
	if !r.file {
		return handleResourcesPrefix + r.ref + "/snapshot"
	}
	segments := strings.Split(r.path, "/")
	for i, seg := range segments {
		segments[i] = url.PathEscape(seg)
	}
	return handleResourcesPrefix + r.ref + "/files/" + strings.Join(segments, "/")
}

// isHandleURI reports whether uri has the form of a handle's resource,
// valid or not, rather than a 2025 session's.
func isHandleURI(uri string) bool {
	return strings.HasPrefix(uri, handleResourcesPrefix+refPrefix)
}

// parseHandleURI checks uri as a resource of a handle's workspace and
// returns it. Every error starts with "uri: " and says what a good one
// looks like; a path is held to the tools' rules (wspath.Clean), after
// one round of %-decoding.
func parseHandleURI(uri string) (handleResource, error) {
	if len(uri) > maxHandleURI {
		return handleResource{}, fmt.Errorf("uri: %d bytes, over the %d a workspace resource's URI may have; name a shorter path", len(uri), maxHandleURI)
	}
	rest, ok := strings.CutPrefix(uri, handleResourcesPrefix)
	if !ok || !strings.HasPrefix(rest, refPrefix) {
		return handleResource{}, fmt.Errorf("uri: %q is not a resource of a workspace handle; under MCP 2026-07-28 a resource is %s or %s, "+
			"where workspace is the reference workspace_open returned (%s...)", truncateURI(uri), HandleFilesTemplate, HandleSnapshotTemplate, refPrefix)
	}
	ref, what, _ := strings.Cut(rest, "/")
	if !validRef(ref) {
		return handleResource{}, fmt.Errorf("uri: %q does not hold a workspace reference: one is %s and %d letters, digits, '-' or '_', as workspace_open returned it",
			truncateURI(uri), refPrefix, refLength-len(refPrefix))
	}
	switch what {
	case "snapshot":
		return handleResource{ref: ref}, nil
	case "digest":
		return handleResource{ref: ref, digest: true}, nil
	}
	escaped, ok := strings.CutPrefix(what, "files/")
	if !ok {
		return handleResource{}, fmt.Errorf("uri: %q names neither a file (%s), the snapshot (%s) nor the digest (%s)", truncateURI(uri), HandleFilesTemplate, HandleSnapshotTemplate, HandleDigestTemplate)
	}
	raw, err := url.PathUnescape(escaped)
	if err != nil {
		return handleResource{}, fmt.Errorf("uri: %q has a bad %%-escape: %w", truncateURI(uri), err)
	}
	path, err := wspath.Clean(raw)
	if err != nil {
		return handleResource{}, fmt.Errorf("uri: the path of %q: %w", truncateURI(uri), err)
	}
	if path == "" {
		return handleResource{}, fmt.Errorf("uri: %q names no file; name a file under /workspace, or the snapshot (%s) for every change", truncateURI(uri), HandleSnapshotTemplate)
	}
	return handleResource{ref: ref, file: true, path: path}, nil
}

// validRef reports whether ref has the form refOf gives.
func validRef(ref string) bool {
	if len(ref) != refLength || !strings.HasPrefix(ref, refPrefix) {
		return false
	}
	for _, c := range ref[len(refPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// affects reports whether a change of paths ("" for anything) touches r:
// the snapshot always, a file when it or a directory above it changed,
// the digest never (it changes by workspace_digest alone).
func (r handleResource) affects(paths []string) bool {
	if r.digest {
		return false
	}
	if !r.file {
		return true
	}
	for _, p := range paths {
		if p == "" || p == r.path || strings.HasPrefix(r.path, p+"/") {
			return true
		}
	}
	return false
}

package server

import (
	"strings"
	"testing"
)

// TestParseHandleURIRefusesHostileURIs: whatever a careless or hostile
// client writes, a handle resource URI either names a clean path under
// /workspace of a well-formed reference, or is refused with an error
// naming uri and what a good one is; never a path outside the workspace.
func TestParseHandleURIRefusesHostileURIs(t *testing.T) {
	t.Parallel()
	ref := refOf("wsh_test")
	base := handleResourcesPrefix + ref
	for _, uri := range []string{
		"", "wink://workspace/files/a", "wink://workspace/snapshot", "file:///etc/passwd",
		base, base + "/", base + "/files/", base + "/files", base + "/snapshot/x", base + "/digest/x", base + "/other/a",
		base + "/files/../../etc/passwd", base + "/files/%2e%2e/%2e%2e/etc/passwd", base + "/files/a/%2E%2E/%2E%2E/x",
		base + "/files/..%2F..%2Fetc", base + "/files//etc/passwd", base + "/files/%2Fetc%2Fpasswd",
		base + "/files/a%zz", base + "/files/a%00b", base + "/files/a\x00b", base + "/files/caf\u00e9",
		base + "/files/" + strings.Repeat("a/", 40) + "x",
		handleResourcesPrefix + "wsr_short/files/a", handleResourcesPrefix + ref + "x/files/a",
		handleResourcesPrefix + "WSR_" + ref[4:] + "/files/a", handleResourcesPrefix + ref[:len(ref)-1] + "!/files/a",
		handleResourcesPrefix + ref[:len(ref)-1] + "%41/files/a", handleResourcesPrefix + "wsh_" + ref[4:] + "/files/a",
		base + "/files/" + strings.Repeat("x", maxHandleURI),
	} {
		r, err := parseHandleURI(uri)
		if err == nil {
			t.Errorf("parseHandleURI(%q) = %+v, want an error", truncateURI(uri), r)
			continue
		}
		if !strings.HasPrefix(err.Error(), "uri: ") || len(err.Error()) > 1000 {
			t.Errorf("parseHandleURI(%q): %q, want a short error naming uri", truncateURI(uri), truncateURI(err.Error()))
		}
	}
	huge, err := parseHandleURI(base + "/files/" + strings.Repeat("x", 10<<20))
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("a 10 MiB URI: %+v, %v", huge, err)
	}
}

// TestParseHandleURIAcceptsItsOwn: the URIs the server hands out parse
// back to what they name, with one round of %-decoding and the path made
// canonical.
func TestParseHandleURIAcceptsItsOwn(t *testing.T) {
	t.Parallel()
	ref := refOf("wsh_test")
	base := handleResourcesPrefix + ref
	for uri, want := range map[string]handleResource{
		base + "/snapshot":           {ref: ref},
		base + "/digest":             {ref: ref, digest: true},
		base + "/files/a.txt":        {ref: ref, file: true, path: "a.txt"},
		base + "/files/src%2Fa.py":   {ref: ref, file: true, path: "src/a.py"},
		base + "/files/./src//a.py":  {ref: ref, file: true, path: "src/a.py"},
		base + "/files/a/../b":       {ref: ref, file: true, path: "b"},
		base + "/files/%252e%252e":   {ref: ref, file: true, path: "%2e%2e"}, // one round: a file named so, inside
		base + "/files/with%20space": {ref: ref, file: true, path: "with space"},
		base + "/files/a\\..\\x":     {ref: ref, file: true, path: "a\\..\\x"}, // one name with backslashes, inside
		base + "/files/100%25%3F#":   {ref: ref, file: true, path: "100%?#"},
	} {
		got, err := parseHandleURI(uri)
		if err != nil || got != want {
			t.Errorf("parseHandleURI(%q) = %+v, %v; want %+v", uri, got, err, want)
			continue
		}
		if back, err := parseHandleURI(got.uri()); err != nil || back != got {
			t.Errorf("%q's canonical URI %q parses to %+v, %v", uri, got.uri(), back, err)
		}
	}
}

// TestRefOfHidesTheHandle: a reference has the form validRef accepts,
// differs between handles, and does not contain the handle.
func TestRefOfHidesTheHandle(t *testing.T) {
	t.Parallel()
	store := newHandleStore()
	seen := map[string]bool{}
	for range 100 {
		handle, _ := store.open("p", nil)
		ref := refOf(handle)
		if !validRef(ref) || seen[ref] || strings.Contains(ref, handle[len(handlePrefix):len(handlePrefix)+8]) {
			t.Fatalf("refOf(%q) = %q", handle, ref)
		}
		seen[ref] = true
	}
}

// TestHandleResourceAffects: a change reaches the snapshot always, a file
// when it, or a directory above it, or anything ("") changed.
func TestHandleResourceAffects(t *testing.T) {
	t.Parallel()
	file := handleResource{ref: "r", file: true, path: "src/lib/a.py"}
	for paths, want := range map[string]bool{"src/lib/a.py": true, "src": true, "src/lib": true, "": true, "src/li": false, "src/lib/a.pyc": false, "other": false} {
		if got := file.affects([]string{paths}); got != want {
			t.Errorf("a change of %q affects %s: %v, want %v", paths, file.path, got, want)
		}
	}
	if !(handleResource{ref: "r"}).affects([]string{"anything"}) {
		t.Error("the snapshot is not affected by a change")
	}
	if (handleResource{ref: "r", digest: true}).affects([]string{""}) {
		t.Error("the digest is affected by a file's change")
	}
}

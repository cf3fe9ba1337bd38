package profiles

import (
	"embed"
	"fmt"
	"path"
)

//go:embed builtin/*.yaml
var builtinFiles embed.FS

// BuiltinFileID is the file identity (Profile.FileID) of the built-in
// profiles: their images' label, so that no profiles file's prune takes
// them for its own or for a file that is gone.
const BuiltinFileID = "builtin:"

// BuiltinNames are the built-in profiles, in the order they are listed.
var BuiltinNames = []string{"general", "python", "node", "go", "rust"}

// Unavailable is a built-in profile that could not be offered, and why.
type Unavailable struct {
	Name   string
	Reason string
}

// Builtin returns the built-in profiles, which need no file: general
// (the server's image as it is), python, node, go and rust. Their setup
// downloads from the registries lookup names (WINK_APT_MIRROR_HOST,
// WINK_GO_PROXY and WINK_GO_PROXY_HOST, WINK_NPM_REGISTRY and
// WINK_NPM_REGISTRY_HOST; see docs/toolchains.md); one whose variable
// lookup does not give is left out and returned as unavailable, saying
// which. Each is checked like a profile of a file.
func Builtin(lookup func(string) (string, bool)) (*File, []Unavailable) {
	f := &File{Path: "built-in profiles", ID: BuiltinFileID, Profiles: map[string]*Profile{}}
	var out []Unavailable
	for _, name := range BuiltinNames {
		data, err := builtinFiles.ReadFile(path.Join("builtin", name+".yaml"))
		if err != nil {
			panic(fmt.Sprintf("built-in profile %s: %v", name, err)) // the embed holds every name
		}
		one, err := parse("built-in profile "+name+".yaml", BuiltinFileID, data, lookup)
		if err != nil {
			out = append(out, Unavailable{Name: name, Reason: err.Error()})
			continue
		}
		f.Profiles[name] = one.Profiles[name]
	}
	return f, out
}

// IsBuiltin reports whether p is a built-in profile (not one a file
// defines, even of the same name).
func (p *Profile) IsBuiltin() bool { return p.FileID == BuiltinFileID }

// WithBuiltins returns the profiles of user (which may be nil: no file)
// and the built-in ones it does not define: a file's profile of a
// built-in's name replaces it. The file's path, identity and default stay.
func WithBuiltins(builtin, user *File) *File {
	if user == nil {
		return builtin
	}
	out := &File{Path: user.Path, ID: user.ID, Default: user.Default, Profiles: map[string]*Profile{}}
	for name, p := range builtin.Profiles {
		out.Profiles[name] = p
	}
	for name, p := range user.Profiles {
		out.Profiles[name] = p
	}
	return out
}

// OwnsImagesOf reports whether images labelled with the file identity id
// belong to f's profiles: f's own file's, or the built-in profiles'.
func (f *File) OwnsImagesOf(id string) bool {
	return f != nil && (id == f.ID || id == BuiltinFileID && f.hasBuiltin())
}

func (f *File) hasBuiltin() bool {
	for _, p := range f.Profiles {
		if p.IsBuiltin() {
			return true
		}
	}
	return false
}

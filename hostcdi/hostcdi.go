// Package hostcdi reads the Container Device Interface (CDI) specs of
// this machine (/etc/cdi and /var/run/cdi, where Podman reads them): the
// devices each vendor's spec names, qualified as "vendor.com/class=name",
// and what each gives a container (device nodes, environment, mounts).
// The server checks a requested device against them before any
// container is made, the workspace checks a new container has the
// device nodes they name, and doctor lists them. It reads files only.
package hostcdi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Dirs are where Podman reads CDI specs, in order.
var Dirs = []string{"/etc/cdi", "/var/run/cdi"}

// maxSpecBytes bounds one spec file.
const maxSpecBytes = 4 << 20

// qualified is a CDI device's qualified name.
var qualified = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*=[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// CheckName checks that name is a qualified CDI device name
// (vendor.com/class=name); all is accepted as a name, as CDI allows.
func CheckName(name string) error {
	if !qualified.MatchString(name) {
		return fmt.Errorf("%q is not a CDI device name: want vendor.com/class=name, such as nvidia.com/gpu=all", name)
	}
	return nil
}

// Device is one device a spec names.
type Device struct {
	// Name is its qualified name.
	Name string
	// File is the spec it comes from.
	File string
	// Nodes are the device nodes it gives a container (their paths in the
	// container).
	Nodes []string
	// Env and Mounts are what else it gives: "NAME=value" and
	// "host:container".
	Env    []string
	Mounts []string
}

// Spec is one spec file: its kind and devices, or why it could not be
// read.
type Spec struct {
	File    string
	Kind    string
	Devices []Device
	Err     error
}

// spec is the part of a CDI spec file this package reads.
type spec struct {
	Kind    string `json:"kind" yaml:"kind"`
	Devices []struct {
		Name  string `json:"name" yaml:"name"`
		Edits edits  `json:"containerEdits" yaml:"containerEdits"`
	} `json:"devices" yaml:"devices"`
	Edits edits `json:"containerEdits" yaml:"containerEdits"`
}

type edits struct {
	Env   []string `json:"env" yaml:"env"`
	Nodes []struct {
		Path string `json:"path" yaml:"path"`
	} `json:"deviceNodes" yaml:"deviceNodes"`
	Mounts []struct {
		HostPath      string `json:"hostPath" yaml:"hostPath"`
		ContainerPath string `json:"containerPath" yaml:"containerPath"`
	} `json:"mounts" yaml:"mounts"`
}

// Scan reads the .yaml, .yml and .json files of dirs; a missing
// directory holds none. A file that cannot be read or parsed is a Spec
// with its Err.
func Scan(dirs []string) []Spec {
	var specs []Spec
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			specs = append(specs, Spec{File: dir, Err: err})
			continue
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			specs = append(specs, read(filepath.Join(dir, e.Name()), ext))
		}
	}
	return specs
}

// read reads one spec file.
func read(file, ext string) Spec {
	s := Spec{File: file}
	info, err := os.Stat(file)
	if err == nil && info.Size() > maxSpecBytes {
		err = fmt.Errorf("%d bytes, over %d", info.Size(), maxSpecBytes)
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(file)
	}
	var raw spec
	if err == nil && ext == ".json" {
		err = json.Unmarshal(data, &raw)
	} else if err == nil {
		err = yaml.Unmarshal(data, &raw)
	}
	if err == nil && !strings.Contains(raw.Kind, "/") {
		err = fmt.Errorf("its kind %q is not vendor.com/class", raw.Kind)
	}
	if err != nil {
		s.Err = err
		return s
	}
	s.Kind = raw.Kind
	for _, d := range raw.Devices {
		dev := Device{Name: raw.Kind + "=" + d.Name, File: file}
		for _, e := range []edits{raw.Edits, d.Edits} {
			for _, n := range e.Nodes {
				dev.Nodes = append(dev.Nodes, n.Path)
			}
			dev.Env = append(dev.Env, e.Env...)
			for _, m := range e.Mounts {
				dev.Mounts = append(dev.Mounts, m.HostPath+":"+m.ContainerPath)
			}
		}
		s.Devices = append(s.Devices, dev)
	}
	return s
}

// Find returns the device called name in specs.
func Find(specs []Spec, name string) (Device, bool) {
	for _, s := range specs {
		if i := slices.IndexFunc(s.Devices, func(d Device) bool { return d.Name == name }); i >= 0 {
			return s.Devices[i], true
		}
	}
	return Device{}, false
}

// Names lists the devices of specs, for a message.
func Names(specs []Spec) []string {
	var names []string
	for _, s := range specs {
		for _, d := range s.Devices {
			names = append(names, d.Name)
		}
	}
	return names
}

// Resolve finds each of names in the specs of dirs; the error of one
// that is missing names it, the directories and the devices there are.
func Resolve(dirs, names []string) ([]Device, error) {
	specs := Scan(dirs)
	var found []Device
	for _, name := range names {
		if err := CheckName(name); err != nil {
			return nil, err
		}
		d, ok := Find(specs, name)
		if !ok {
			there := "none"
			if all := Names(specs); len(all) > 0 {
				there = strings.Join(all, ", ")
			}
			var bad []string
			for _, s := range specs {
				if s.Err != nil {
					bad = append(bad, fmt.Sprintf("%s: %v", s.File, s.Err))
				}
			}
			msg := fmt.Sprintf("CDI device %s: no spec in %s defines it (devices there: %s)", name, strings.Join(dirs, " or "), there)
			if len(bad) > 0 {
				msg += "; unreadable specs: " + strings.Join(bad, "; ")
			}
			return nil, errors.New(msg + ". Install the vendor's CDI spec (for NVIDIA: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml) or fix the name")
		}
		found = append(found, d)
	}
	return found, nil
}

//go:build !containers_image_openpgp

package main

import (
	"context"
	"errors"
)

// measureExecBaseline needs the Podman bindings, which need the
// Makefile's build tags (see package engine/podman); `make bench` has them.
func measureExecBaseline(context.Context, config, string, int) (measurement, error) {
	return measurement{}, errors.New("measuring the podman exec baseline: this wink-bench was built without the Podman bindings; run it with `make bench`")
}

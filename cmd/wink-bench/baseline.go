//go:build containers_image_openpgp

package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/containers/podman/v5/pkg/api/handlers"
	"github.com/containers/podman/v5/pkg/bindings"
	"github.com/containers/podman/v5/pkg/bindings/containers"
	dockerContainer "github.com/docker/docker/api/types/container"
)

// measureExecBaseline reads the same 4 KiB file the way the seed spec does:
// one exec of cat per read, through the Podman bindings.
func measureExecBaseline(ctx context.Context, cfg config, container string, n int) (measurement, error) {
	conn, err := bindings.NewConnection(ctx, "unix://"+cfg.socket)
	if err != nil {
		return measurement{}, err
	}
	m := measure("baseline: podman exec cat per read (bindings)", n, func(int) error {
		id, err := containers.ExecCreate(conn, container, &handlers.ExecCreateConfig{ExecOptions: dockerContainer.ExecOptions{
			AttachStdout: true, AttachStderr: true, Cmd: []string{"cat", "/workspace/bench/read.txt"},
		}})
		if err != nil {
			return err
		}
		var out, errOut bytes.Buffer
		opts := new(containers.ExecStartAndAttachOptions).WithOutputStream(&out).WithErrorStream(&errOut).
			WithAttachOutput(true).WithAttachError(true)
		if err := containers.ExecStartAndAttach(conn, id, opts); err != nil {
			return err
		}
		if out.Len() != len(fourKiB) {
			return fmt.Errorf("cat returned %d bytes", out.Len())
		}
		return nil
	})
	return m, nil
}

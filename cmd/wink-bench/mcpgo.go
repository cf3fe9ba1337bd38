package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// measureMCPGoRead measures read_file with mcp-go's client, whose parsing of
// each result is part of what it costs a real client.
func measureMCPGoRead(ctx context.Context, cfg config) (measurement, error) {
	cache, err := os.MkdirTemp("", "wink-bench-")
	if err != nil {
		return measurement{}, err
	}
	defer os.RemoveAll(cache)
	c, err := client.NewStdioMCPClient(cfg.bin, nil, serverArgs(cfg, cache)...)
	if err != nil {
		return measurement{}, err
	}
	defer c.Close()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "wink-bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return measurement{}, err
	}
	call := func(name string, args map[string]any) error {
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s failed: %v", name, res.Content)
		}
		return err
	}
	if err := call("write_file", map[string]any{"file_path": "read.txt", "content": fourKiB}); err != nil {
		return measurement{}, err
	}
	return measure("read_file 4 KiB, with mcp-go's client", cfg.samples, func(int) error {
		return call("read_file", map[string]any{"file_path": "read.txt"})
	}), nil
}

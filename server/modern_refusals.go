package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/wink-mcp/wink-mcp/server/mcpgoadapt"
)

// modernRefusals answers, in front of mcp-go, the 2026-07-28 requests whose
// error mcp-go cannot give the code that revision asks for (a hook's
// refusal is always -32600 there):
//   - the methods the revision removed and the server serves only to
//     2025 sessions (resources/subscribe and unsubscribe, the 2025 tasks
//     methods) get -32601, method not found (HTTP 404);
//   - a resources/list whose _meta names a handle the principal cannot
//     use gets -32602 naming it, not an empty list;
//   - a resources/read of a URI no template matches gets -32602 with the
//     URI in its data (SEP-2164).
func modernRefusals(views *handleViews) mcpgoadapt.Interceptor {
	return mcpgoadapt.Interceptor{
		Markers: [][]byte{[]byte("subscribe"), []byte("tasks/"), []byte("resources/list"), []byte("resources/read")},
		Answer: func(ctx context.Context, head *mcpgoadapt.Head, _ json.RawMessage) (any, bool) {
			if !mcp.IsModernProtocol(head.ProtocolVersion(mcp.MetaKeyProtocolVersion)) || !head.ParamsRead() {
				return nil, false
			}
			switch method := head.MethodName(); {
			case method == string(mcp.MethodResourcesSubscribe), method == string(mcp.MethodResourcesUnsubscribe):
				return rpcError(head.ID, mcp.METHOD_NOT_FOUND, method+" is for sessions of the 2025 revisions: under 2026-07-28, follow a handle's files with subscriptions/listen "+
					"(notifications.resourceSubscriptions, URIs from workspace_open's resources)"), true
			case strings.HasPrefix(method, "tasks/"): // tasks/get, cancel and update are the extension's: modernTasks answered them
				return rpcError(head.ID, mcp.METHOD_NOT_FOUND, method+" is of the 2025 revisions: under 2026-07-28 tasks are the io.modelcontextprotocol/tasks extension "+
					"(tasks/get, tasks/cancel, tasks/update)"), true
			case method == string(mcp.MethodResourcesList):
				return refuseUnknownListHandle(ctx, views, head)
			case method == string(mcp.MethodResourcesRead):
				return refuseUnmatchedURI(head)
			}
			return nil, false
		},
	}
}

// refuseUnknownListHandle answers a resources/list whose _meta names a
// handle ctx's principal cannot use; a known one is left to mcp-go (and
// listHandleResources), held here now if it was another replica's.
func refuseUnknownListHandle(ctx context.Context, views *handleViews, head *mcpgoadapt.Head) (any, bool) {
	raw, ok := head.Params.Meta[handleMetaKey]
	if !ok {
		return nil, false
	}
	var handle string
	if json.Unmarshal(raw, &handle) != nil || handle == "" {
		return rpcError(head.ID, mcp.INVALID_PARAMS, "params._meta."+handleMetaKey+": a workspace handle is a non-empty string, the one workspace_open returned"), true
	}
	_, end, err := views.beginCall(ctx, handle)
	if err != nil {
		return rpcError(head.ID, mcp.INVALID_PARAMS, "params._meta."+handleMetaKey+": "+err.Error()), true
	}
	end()
	return nil, false
}

// refuseUnmatchedURI answers a resources/read of a URI that is not a
// workspace handle's: under 2026-07-28 no other resource exists.
func refuseUnmatchedURI(head *mcpgoadapt.Head) (any, bool) {
	uri, ok := head.URI()
	if !ok || uri == "" || isHandleURI(uri) {
		return nil, false // a malformed uri is mcp-go's to refuse; a handle's, readHandleResource's
	}
	answer := rpcError(head.ID, mcp.INVALID_PARAMS, "resource not found: "+truncateURI(uri)+
		" (under 2026-07-28 the resources are a workspace handle's, "+HandleFilesTemplate+")")
	answer["error"].(map[string]any)["data"] = map[string]any{"uri": uri}
	return answer, true
}

// interceptor is what both transports that serve 2026-07-28 (stdio and
// streamable HTTP) answer in front of mcp-go: the tasks extension, then
// modernRefusals.
func interceptor(s *Server) mcpgoadapt.Interceptor {
	return mcpgoadapt.Chain(s.tasks2026.interceptor(), modernRefusals(s.views))
}

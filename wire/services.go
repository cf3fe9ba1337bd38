package wire

// A service is a container of its own beside a workspace (package
// workspace/services). The workspace reaches its ports on its own
// loopback: the agent listens there (OpServiceForward) and carries each
// connection over the tunnel, on a stream it opens by writing
// ServiceRequest with the service's name and port; the server answers
// ServiceOK, or "error: " and why, on one line, then carries the
// connection to the service's agent as a port preview (PortRequest).
const (
	// OpServiceForward makes the agent listen on a port of the
	// container's loopback for a service (ServiceForwardArgs).
	OpServiceForward = "service_forward"
	// OpServiceUnforward stops listening on a port (ServiceForwardArgs,
	// Port only).
	OpServiceUnforward = "service_unforward"

	ServiceRequest = "wink-service %s %d\n"
	ServiceOK      = "ok\n"
)

// ServiceForwardArgs are the arguments of OpServiceForward: listen on
// 127.0.0.1:Port and carry each connection to Service's ServicePort.
type ServiceForwardArgs struct {
	Port        int    `json:"port"`
	Service     string `json:"service,omitempty"`
	ServicePort int    `json:"service_port,omitempty"`
}

// ServiceForwardResult answers OpServiceForward and OpServiceUnforward.
type ServiceForwardResult struct {
	Listening bool `json:"listening"`
}

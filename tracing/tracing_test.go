package tracing

import (
	"context"
	"strings"
	"testing"
)

// TestStartNamesTheFlag checks an endpoint that is not an HTTP URL is
// refused with an error naming the flag.
func TestStartNamesTheFlag(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"127.0.0.1:4318", "grpc://collector:4317", "http://", "::"} {
		if _, err := Start(context.Background(), endpoint, "test"); err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
			t.Errorf("Start(%q) = %v, want an error naming --otlp-endpoint", endpoint, err)
		}
	}
}

// Package tracing sends OpenTelemetry traces of tool calls to an OTLP/HTTP
// endpoint when one is configured. It installs the SDK's tracer provider as OpenTelemetry's global
// one, which is how the server and the workspace reach it; with no
// endpoint the global provider stays OpenTelemetry's no-op.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracesPath is where an OTLP/HTTP receiver takes traces, under its base URL.
const tracesPath = "/v1/traces"

// Start sends traces to the OTLP/HTTP (protobuf) receiver at endpoint, a
// base URL such as http://127.0.0.1:4318 (as OTEL_EXPORTER_OTLP_ENDPOINT
// names one; /v1/traces is appended), naming this service wink-mcp at
// version. The returned function flushes the spans not yet sent and stops;
// the caller calls it at exit.
func Start(ctx context.Context, endpoint, version string) (shutdown func(context.Context) error, err error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--otlp-endpoint %q: want the base URL of an OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (traces go to /v1/traces under it)", endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint: making the OTLP exporter: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "wink-mcp"), attribute.String("service.version", version))))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return provider.Shutdown, nil
}

package services

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxComposeBytes bounds a compose file Compose reads.
const MaxComposeBytes = 64 << 10

// ComposeNames are the files ComposeFile looks for, in order, when the
// model names none.
var ComposeNames = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// Compose reads the subset of a compose file services make sense of:
// services, each with image, command, environment, ports, depends_on and
// healthcheck; every other key is refused, named with its line. image
// names a profile (or a profile's image), which profileOf resolves: a
// service's software comes from a profile. The services come back in
// start order.
func Compose(path string, data []byte, profileOf func(image string) (string, error)) ([]Declared, error) {
	if len(data) > MaxComposeBytes {
		return nil, fmt.Errorf("%s: %d bytes; a compose file may have at most %d", path, len(data), MaxComposeBytes)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	c := composeReader{path: path, profileOf: profileOf}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a compose file: it needs a services: mapping", path)
	}
	var decls []Declared
	c.pairs(root.Content[0], "", func(key string, k, v *yaml.Node) {
		switch key {
		case "services":
			decls = c.services(v)
		case "name", "version": // the project's name, an obsolete version: nothing to do
		default:
			c.fail(k, key, "is not in the subset wink-mcp reads (services, each with image, command, environment, ports, depends_on, healthcheck)")
		}
	})
	if len(c.errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(c.errs, "\n"))
	}
	if len(decls) == 0 {
		return nil, fmt.Errorf("%s: declares no services", path)
	}
	if len(decls) > MaxServices {
		return nil, fmt.Errorf("%s: services: %d services; a workspace may have at most %d", path, len(decls), MaxServices)
	}
	ordered, err := Order(decls)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ordered, nil
}

// composeReader reads one compose file, gathering its errors.
type composeReader struct {
	path      string
	profileOf func(string) (string, error)
	errs      []string
}

func (c *composeReader) fail(n *yaml.Node, field, format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf("%s:%d: %s: %s", c.path, n.Line, field, fmt.Sprintf(format, args...)))
}

func (c *composeReader) pairs(n *yaml.Node, field string, f func(key string, k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		c.fail(n, strings.TrimPrefix(field, "."), "must be a mapping")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind == yaml.AliasNode || k.Value == "<<" {
			c.fail(k, field+".key", "must be a plain string (no anchors, aliases or merges)")
			continue
		}
		f(k.Value, k, v)
	}
}

// services reads the services: mapping.
func (c *composeReader) services(n *yaml.Node) []Declared {
	var out []Declared
	c.pairs(n, "services", func(name string, k, v *yaml.Node) {
		field := "services." + name
		d := Declared{Spec: Spec{Name: name}}
		var image *yaml.Node
		c.pairs(v, field, func(key string, k, v *yaml.Node) {
			sub := field + "." + key
			switch key {
			case "image":
				image = v
			case "command":
				d.Command = c.command(v, sub)
			case "environment":
				d.Env = c.environment(v, sub)
			case "ports":
				d.Ports = c.ports(v, sub)
			case "depends_on":
				d.DependsOn = c.dependsOn(v, sub)
			case "healthcheck":
				d.Ready = c.healthcheck(v, sub)
			default:
				c.fail(k, sub, "is not in the subset wink-mcp reads (image, command, environment, ports, depends_on, healthcheck)")
			}
		})
		switch {
		case image == nil:
			c.fail(k, field+".image", "is required: the profile (or a profile's image) whose software the service runs")
		case image.Kind != yaml.ScalarNode:
			c.fail(image, field+".image", "must be a single value")
		default:
			profile, err := c.profileOf(image.Value)
			if err != nil {
				c.fail(image, field+".image", "%v", err)
			}
			d.Profile = profile
		}
		if len(d.Command) == 0 {
			c.fail(k, field+".command", "is required: wink-mcp runs the command in the profile's image, not the image's own entrypoint")
		}
		if d.Ready.Port == 0 && len(d.Ready.Command) == 0 && len(d.Ports) > 0 {
			d.Ready.Port = d.Ports[0] // no healthcheck: ready when its first port answers
		}
		if image != nil && len(d.Command) > 0 && d.Profile != "" {
			if err := d.Spec.Check(); err != nil {
				c.fail(k, field, "%v", err)
			}
		}
		out = append(out, d)
	})
	return out
}

// list reads a scalar or a list of scalars.
func (c *composeReader) list(n *yaml.Node, field string) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				c.fail(item, fmt.Sprintf("%s[%d]", field, i), "must be a single value")
				continue
			}
			out = append(out, item.Value)
		}
		return out
	}
	c.fail(n, field, "must be a value or a list")
	return nil
}

// command reads a command: a list as it is, a string run by sh -c.
func (c *composeReader) command(n *yaml.Node, field string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{"sh", "-c", n.Value}
	}
	return c.list(n, field)
}

// environment reads a mapping or a list of NAME=value.
func (c *composeReader) environment(n *yaml.Node, field string) map[string]string {
	env := map[string]string{}
	if n.Kind == yaml.MappingNode {
		c.pairs(n, field, func(key string, _, v *yaml.Node) {
			if v.Kind != yaml.ScalarNode {
				c.fail(v, field+"."+key, "must be a single value")
				return
			}
			env[key] = v.Value
		})
		return env
	}
	for i, kv := range c.list(n, field) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			c.fail(n, fmt.Sprintf("%s[%d]", field, i), "%q is not NAME=value", kv)
			continue
		}
		env[k] = v
	}
	return env
}

// ports reads "5432", "5432:5432" or "127.0.0.1:5432:5432": the workspace
// reaches a service's port at the same number on its loopback, so a
// mapping to another number is refused.
func (c *composeReader) ports(n *yaml.Node, field string) []int {
	var out []int
	for i, s := range c.list(n, field) {
		sub := fmt.Sprintf("%s[%d]", field, i)
		s = strings.TrimSuffix(s, "/tcp")
		parts := strings.Split(s, ":")
		if len(parts) == 3 && parts[0] == "127.0.0.1" {
			parts = parts[1:]
		}
		if len(parts) > 2 || strings.Contains(s, "/") || strings.Contains(s, "-") {
			c.fail(n, sub, "%q: a port is PORT or PORT:PORT (TCP, no ranges, no other address)", s)
			continue
		}
		if len(parts) == 2 && parts[0] != parts[1] {
			c.fail(n, sub, "%q maps to another number: the workspace reaches a service's port at the same number on 127.0.0.1", s)
			continue
		}
		p, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			c.fail(n, sub, "%q is not a port number", s)
			continue
		}
		out = append(out, p)
	}
	return out
}

// dependsOn reads a list of names or a mapping of names to conditions;
// every condition waits for readiness here.
func (c *composeReader) dependsOn(n *yaml.Node, field string) []string {
	if n.Kind != yaml.MappingNode {
		return c.list(n, field)
	}
	var out []string
	c.pairs(n, field, func(name string, _, v *yaml.Node) {
		c.pairs(v, field+"."+name, func(key string, k, v *yaml.Node) {
			if key != "condition" || !slices.Contains([]string{"service_started", "service_healthy"}, v.Value) {
				c.fail(k, field+"."+name+"."+key, "only condition: service_started or service_healthy (both wait for the service's readiness)")
			}
		})
		out = append(out, name)
	})
	return out
}

// healthcheck reads test (CMD, CMD-SHELL or a string) and bounds the wait
// by start_period + interval * retries (default 60 s).
func (c *composeReader) healthcheck(n *yaml.Node, field string) Ready {
	var r Ready
	interval, retries, start := 30*time.Second, 3, time.Duration(0)
	timed := false
	c.pairs(n, field, func(key string, k, v *yaml.Node) {
		sub := field + "." + key
		switch key {
		case "test":
			r.Command = c.healthTest(v, sub)
		case "interval", "start_period":
			d, err := time.ParseDuration(v.Value)
			if err != nil {
				c.fail(v, sub, "%q is not a duration (such as 5s)", v.Value)
			}
			if key == "interval" {
				interval = d
			} else {
				start = d
			}
			timed = true
		case "retries":
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 1 {
				c.fail(v, sub, "%q is not a positive number", v.Value)
			}
			retries, timed = n, true
		case "timeout":
		default:
			c.fail(k, sub, "is not in the subset wink-mcp reads (test, interval, timeout, retries, start_period)")
		}
	})
	if timed {
		r.Timeout = min(max(start+interval*time.Duration(retries), time.Second), MaxReadyTimeout)
	}
	return r
}

func (c *composeReader) healthTest(n *yaml.Node, field string) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{"sh", "-c", n.Value}
	}
	test := c.list(n, field)
	switch {
	case len(test) >= 2 && test[0] == "CMD":
		return test[1:]
	case len(test) == 2 && test[0] == "CMD-SHELL":
		return []string{"sh", "-c", test[1]}
	}
	c.fail(n, field, "must be [CMD, program, args...], [CMD-SHELL, command] or a command string")
	return nil
}

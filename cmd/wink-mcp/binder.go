package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/profiles"
)

// binder registers flags whose defaults come from environment variables.
type binder struct {
	fs     *flag.FlagSet
	lookup func(string) (string, bool)
	errs   []error
}

// value is a flag.Value over a typed destination.
type value[T any] struct {
	p      *T
	parse  func(string) (T, error)
	isBool bool
}

func (v *value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *value[T]) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return fmt.Sprint(*v.p)
}

func (v *value[T]) IsBoolFlag() bool { return v.isBool }

func bind[T any](b *binder, p *T, name, usage string, envs []string, parse func(string) (T, error), isBool bool) {
	v := &value[T]{p: p, parse: parse, isBool: isBool}
	for _, env := range envs {
		if s, ok := b.lookup(env); ok && s != "" {
			if err := v.Set(s); err != nil {
				b.errs = append(b.errs, fmt.Errorf("environment variable %s=%q: %w", env, s, err))
			}
			break
		}
	}
	b.fs.Var(v, name, fmt.Sprintf("%s [%s]", usage, strings.Join(envs, ", ")))
}

func (b *binder) str(p *string, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, func(s string) (string, error) { return s, nil }, false)
}

func (b *binder) boolean(p *bool, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, strconv.ParseBool, true)
}

func (b *binder) duration(p *time.Duration, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, time.ParseDuration, false)
}

func (b *binder) float(p *float64, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, false)
}

func (b *binder) int64(p *int64, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }, false)
}

func (b *binder) uint64(p *uint64, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, func(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }, false)
}

func (b *binder) int(p *int, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, strconv.Atoi, false)
}

// list binds a repeatable flag; the environment variable holds a comma-separated list.
func (b *binder) list(p *[]string, name, usage string, envs ...string) {
	for _, env := range envs {
		if s, ok := b.lookup(env); ok && s != "" {
			for _, item := range strings.Split(s, ",") {
				if item = strings.TrimSpace(item); item != "" {
					*p = append(*p, item)
				}
			}
		}
	}
	b.fs.Func(name, fmt.Sprintf("%s [%s]", usage, strings.Join(envs, ", ")), func(s string) error {
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*p = append(*p, item)
			}
		}
		return nil
	})
}

func (b *binder) bytes(p *int64, name, usage string, envs ...string) {
	bind(b, p, name, usage, envs, profiles.ParseSize, false)
}

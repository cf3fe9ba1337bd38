package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/wink-mcp/wink-mcp/engine"
	"github.com/wink-mcp/wink-mcp/profiles"
	"github.com/wink-mcp/wink-mcp/workspace/images"
)

// pushOptions are the flags of `wink-mcp profiles build` that push the
// built images to a registry, which serve does not have.
type pushOptions struct {
	// repository is --push: the registry repository, without tag.
	repository string
	// tlsVerify is --push-tls-verify, on by default.
	tlsVerify bool
	// authfile is --push-authfile: a path, never a credential.
	authfile string
}

// pushFlagsUsage describes the push flags, for profilesUsage.
const pushFlagsUsage = "build --push REPOSITORY then pushes each image as REPOSITORY:<its content hash>, for --engine kubernetes's\n" +
	"--kubernetes-profile-repository; --push-tls-verify=false skips the registry's certificate check (a private CA goes in\n" +
	"/etc/containers/certs.d/HOST:PORT/ca.crt instead); --push-authfile FILE names the credentials file (default: Podman's usual).\n"

// takePushFlags takes the push flags out of args, leaving serve's.
func takePushFlags(args []string) (o pushOptions, rest []string, err error) {
	o.tlsVerify = true
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || (name != "push" && name != "push-tls-verify" && name != "push-authfile") {
			rest = append(rest, args[i])
			continue
		}
		if name == "push-tls-verify" {
			if !hasValue {
				value = "true"
			}
			if o.tlsVerify, err = strconv.ParseBool(value); err != nil {
				return o, nil, fmt.Errorf("--push-tls-verify=%q: want true or false", value)
			}
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				return o, nil, fmt.Errorf("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if name == "push" {
			o.repository = value
		} else {
			o.authfile = value
		}
	}
	if o.repository != "" {
		err = checkRepository("--push", o.repository)
	} else if !o.tlsVerify || o.authfile != "" {
		err = fmt.Errorf("--push-tls-verify and --push-authfile go with --push REPOSITORY")
	}
	return o, rest, err
}

// checkRepository checks that repo, the value of flag, names a registry
// repository without a tag or digest, which the profiles' tags complete.
func checkRepository(flag, repo string) error {
	last := repo[strings.LastIndex(repo, "/")+1:]
	switch {
	case repo == "":
		return fmt.Errorf("%s: want a registry repository such as registry.example:5000/wink-profiles", flag)
	case strings.Contains(repo, "@") || strings.Contains(last, ":"):
		return fmt.Errorf("%s %q: give the repository without a tag or digest; each profile's image is tagged with its content hash", flag, repo)
	case !strings.Contains(repo, "/"):
		return fmt.Errorf("%s %q: give the registry's host too (HOST[:PORT]/PATH), so that the cluster pulls from the registry pushed to", flag, repo)
	case strings.ToLower(repo) != repo || strings.ContainsAny(repo, " \t\n"):
		return fmt.Errorf("%s %q: a repository is lower-case, without spaces", flag, repo)
	}
	return nil
}

// pushProfile pushes image, profile p's built image, to its reference in
// o.repository (images.Pushed of the server's imageChoices) and prints the
// reference it was pushed as, by digest.
func pushProfile(ctx context.Context, eng engine.Engine, stdout io.Writer, p *profiles.Profile, image string, imageChoices []string, o pushOptions) error {
	dest := images.Pushed(o.repository, p, imageChoices)
	start := time.Now()
	digest, err := pushImage(ctx, eng, image, dest, o)
	if err != nil {
		return err
	}
	byDigest := "(the service did not give its digest)"
	if digest != "" {
		byDigest = o.repository + "@" + digest
	}
	fmt.Fprintf(stdout, "%s: pushed %s as %s in %.1f s\n", p.Name, dest, byDigest, time.Since(start).Seconds())
	return nil
}

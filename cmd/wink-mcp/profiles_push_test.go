package main

import (
	"strings"
	"testing"
)

// TestTakePushFlags checks that the push flags are taken out of
// `profiles build`'s arguments, leaving serve's, and that a bad value
// names its flag.
func TestTakePushFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		args     []string
		want     pushOptions
		wantRest []string
		wantErr  string
	}{
		{"none", []string{"--profiles", "p.yaml"}, pushOptions{tlsVerify: true}, []string{"--profiles", "p.yaml"}, ""},
		{"spaced", []string{"--push", "reg.example:5000/wink", "--profiles", "p.yaml"},
			pushOptions{repository: "reg.example:5000/wink", tlsVerify: true}, []string{"--profiles", "p.yaml"}, ""},
		{"equals", []string{"-push=reg.example/a/b", "--push-tls-verify=false", "--push-authfile", "/run/auth.json"},
			pushOptions{repository: "reg.example/a/b", authfile: "/run/auth.json"}, nil, ""},
		{"no value", []string{"--push"}, pushOptions{}, nil, "--push needs a value"},
		{"tag", []string{"--push", "reg.example/wink:v1"}, pushOptions{}, nil, `--push "reg.example/wink:v1": give the repository without a tag or digest`},
		{"digest", []string{"--push", "reg.example/wink@sha256:00"}, pushOptions{}, nil, "without a tag or digest"},
		{"no host", []string{"--push", "wink"}, pushOptions{}, nil, "give the registry's host too"},
		{"upper case", []string{"--push", "reg.example/Wink"}, pushOptions{}, nil, "lower-case"},
		{"bad bool", []string{"--push", "reg.example/w", "--push-tls-verify=maybe"}, pushOptions{}, nil, `--push-tls-verify="maybe": want true or false`},
		{"verify without push", []string{"--push-tls-verify=false"}, pushOptions{}, nil, "go with --push REPOSITORY"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, rest, err := takePushFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("takePushFlags(%q) = %v; want an error containing %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || strings.Join(rest, " ") != strings.Join(tc.wantRest, " ") {
				t.Errorf("takePushFlags(%q) = %+v, %q, %v; want %+v, %q", tc.args, got, rest, err, tc.want, tc.wantRest)
			}
		})
	}
}

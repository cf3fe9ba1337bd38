package wspath

import (
	"errors"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	seg80 := strings.Repeat("a", 80)
	seg81 := strings.Repeat("a", 81)
	sixteen := strings.TrimSuffix(strings.Repeat("d/", 16), "/")
	longest := strings.TrimSuffix(strings.Repeat(seg80+"/", 16), "/")
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "empty is the root", in: "", want: ""},
		{name: "dot is the root", in: ".", want: ""},
		{name: "plain", in: "a/b.txt", want: "a/b.txt"},
		{name: "normalised", in: "a//b/./c/", want: "a/b/c"},
		{name: "dot slash", in: "./a", want: "a"},
		{name: "dotdot inside", in: "a/../b", want: "b"},
		{name: "dotdot to root", in: "a/..", want: ""},
		{name: "literal odd names", in: "-rf/%2e%2e/\\..\\x", want: "-rf/%2e%2e/\\..\\x"},
		{name: "16 segments", in: sixteen, want: sixteen},
		{name: "17 segments", in: sixteen + "/e", wantErr: "more than 16 segments"},
		{name: "80 characters", in: seg80, want: seg80},
		{name: "81 characters", in: seg81, wantErr: "81 characters long; the limit is 80"},
		{name: "16 by 80", in: longest, want: longest},
		{name: "too long before parsing", in: longest + "/", wantErr: "the limit is 1295"},
		{name: "huge", in: strings.Repeat("a", 1<<20), wantErr: "the limit is 1295"},
		{name: "parent", in: "..", wantErr: "leaves the workspace"},
		{name: "parent prefix", in: "../x", wantErr: "leaves the workspace"},
		{name: "climbs after descending", in: "a/../../x", wantErr: "leaves the workspace"},
		{name: "absolute", in: "/etc/passwd", wantErr: "is absolute"},
		{name: "absolute workspace", in: "/workspace/a.txt", wantErr: `use "a.txt"`},
		{name: "double slash", in: "//x", wantErr: "is absolute"},
		{name: "tilde", in: "~/x", wantErr: "~"},
		{name: "tilde once cleaned", in: "./~", wantErr: "starts with ~ once cleaned"},
		{name: "tilde after a climb", in: "a/../~/x", wantErr: "starts with ~ once cleaned"},
		{name: "tilde inside a name", in: "a~/~b/c~", want: "a~/~b/c~"},
		{name: "NUL", in: "a\x00b", wantErr: "control character 0x00"},
		{name: "newline", in: "a\nb", wantErr: "control character 0x0a"},
		{name: "DEL", in: "a\x7f", wantErr: "control character 0x7f"},
		{name: "accent", in: "café.txt", wantErr: "U+00E9"},
		{name: "RTL override", in: "a\u202eb", wantErr: "U+202E"},
		{name: "invalid UTF-8", in: "a\xffb", wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Clean(tt.in)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Clean = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Clean = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

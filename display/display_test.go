package display

import (
	"strconv"
	"strings"
	"testing"
)

// hostile is a string a model could write to forge or hide lines: a
// newline and a carriage return, ANSI escapes (C0 ESC and the C1 CSI), a
// bidi override, a zero-width character and an invalid byte.
const hostile = "ok\n  c9    forged line\r\x1b[2K\x1b[31mred\u009b2J\u202eevil\u200b\xff"

func TestTextQuotesWhatIsUnsafeAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain", "tests pass", "tests pass"},
		{"unicode letters", "café ✓ 日本", "café ✓ 日本"},
		{"empty", "", ""},
		{"newline", "a\nb", `"a\nb"`},
		{"tab", "a\tb", `"a\tb"`},
		{"escape", "\x1b[31mred", `"\x1b[31mred"`},
		{"C1 CSI", "a\u009bb", `"a\u009bb"`},
		{"next line", "a\u0085b", `"a\u0085b"`},
		{"bidi override", "abc\u202etxt.exe", `"abc\u202etxt.exe"`},
		{"bidi isolate", "a\u2066b", `"a\u2066b"`},
		{"zero width", "a\u200bb", `"a\u200bb"`},
		{"invalid byte", "a\xffb", `"a\xffb"`},
		{"delete", "a\x7fb", `"a\x7fb"`},
		{"nul", "a\x00b", `"a\x00b"`},
		{"leading quote", `"quoted"`, `"\"quoted\""`},
		{"inner quote", `say "hi"`, `say "hi"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Text(tt.in)
			if got != tt.want {
				t.Errorf("Text(%q) = %s; want %s", tt.in, got, tt.want)
			}
			if back, err := strconv.Unquote(got); Safe(tt.in) == (err == nil) || err == nil && back != tt.in {
				t.Errorf("Text(%q) = %s does not give the value back", tt.in, got)
			}
		})
	}
}

func TestTextOfHostileIsOneVisibleLine(t *testing.T) {
	t.Parallel()
	got := Text(hostile)
	if strings.ContainsAny(got, "\n\r\x1b\u009b\u202e\u200b") || !strings.Contains(got, `\u202e`) || !strings.Contains(got, `\xff`) {
		t.Errorf("Text(hostile) = %q", got)
	}
	if got := Texts([]string{"sh", "-c", "echo a\nb"}, " "); got != `sh -c "echo a\nb"` {
		t.Errorf("Texts = %s", got)
	}
}

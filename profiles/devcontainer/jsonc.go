package devcontainer

import (
	"errors"
	"fmt"
)

// standardJSON turns JSON with comments (the Dev Container spec's
// jsonc: "//" and "/* */" comments, trailing commas) into plain JSON,
// keeping every byte's offset so a decoding error still points at the
// right place: comments become spaces, a trailing comma a space.
func standardJSON(src []byte) ([]byte, error) {
	out := make([]byte, len(src))
	copy(out, src)
	lastComma := -1 // offset of a comma that only blanks have followed
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			j, err := stringEnd(out, i)
			if err != nil {
				return nil, err
			}
			i, lastComma = j, -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			for i += 2; i+1 < len(out) && !(out[i] == '*' && out[i+1] == '/'); i++ {
			}
			if i+1 >= len(out) {
				return nil, fmt.Errorf("a /* comment at byte %d is never closed", start)
			}
			for k := start; k <= i+1; k++ {
				if out[k] != '\n' {
					out[k] = ' '
				}
			}
			i++
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out, nil
}

// stringEnd is the offset of the quote closing the string that opens at
// start.
func stringEnd(b []byte, start int) (int, error) {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i, nil
		}
	}
	return 0, errors.New("a string is never closed")
}

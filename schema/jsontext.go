package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// checkJSONText rejects JSON that encoding/json would accept while changing
// its meaning: invalid UTF-8 and lone UTF-16 surrogates (both become U+FFFD)
// and duplicated keys (the last one silently wins).
func checkJSONText(raw []byte) error {
	if !utf8.Valid(raw) {
		return invalidUTF8(raw)
	}
	if err := checkSurrogates(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := checkKeys(dec, "arguments"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("arguments hold more than one JSON value")
	}
	return nil
}

// invalidUTF8 names the argument that holds bytes which are not UTF-8.
func invalidUTF8(raw []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		keys := slices.Sorted(maps.Keys(fields))
		for _, k := range keys {
			if v := fields[k]; !utf8.Valid(v) {
				return fmt.Errorf("%s: not valid UTF-8 (byte %#x); send UTF-8 text", joinField("arguments", k), v[invalidAt(v)])
			}
		}
	}
	return fmt.Errorf("arguments are not valid UTF-8 (byte %#x); send UTF-8 text", raw[invalidAt(raw)])
}

// invalidAt returns the offset of the first byte of b that is not UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

// checkSurrogates finds \uD800-\uDFFF escapes that are not a high surrogate
// followed by a low one.
func checkSurrogates(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 < len(raw) && raw[i+1] == 'u' {
				r, ok := hex4(raw, i+2)
				switch {
				case ok && r >= 0xD800 && r <= 0xDBFF:
					low, okLow := hex4(raw, i+8)
					if i+7 >= len(raw) || raw[i+6] != '\\' || raw[i+7] != 'u' || !okLow || low < 0xDC00 || low > 0xDFFF {
						return fmt.Errorf("arguments hold a lone UTF-16 surrogate \\u%04x; send valid Unicode text", r)
					}
					i += 11
					continue
				case ok && r >= 0xDC00 && r <= 0xDFFF:
					return fmt.Errorf("arguments hold a lone UTF-16 surrogate \\u%04x; send valid Unicode text", r)
				}
			}
			i++ // skip the escaped character
		}
	}
	return nil
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[at:at+4]), 16, 16)
	return rune(v), err == nil
}

// checkKeys walks one JSON value and fails on an object with a repeated key.
func checkKeys(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("arguments are not valid JSON: %w", err)
			}
			key, _ := tok.(string)
			field := joinField(path, key)
			if seen[key] {
				return fmt.Errorf("%s: the key appears more than once", field)
			}
			seen[key] = true
			if err := checkKeys(dec, field); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := checkKeys(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

package changes

import "strconv"

// quotePath quotes a path the way git does when it holds a quote, a
// backslash, a control character or a byte above 0x7f; others pass as they are.
func quotePath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	out := []byte{'"'}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\a':
			out = append(out, `\a`...)
		case '\b':
			out = append(out, `\b`...)
		case '\f':
			out = append(out, `\f`...)
		case '\n':
			out = append(out, `\n`...)
		case '\r':
			out = append(out, `\r`...)
		case '\t':
			out = append(out, `\t`...)
		case '\v':
			out = append(out, `\v`...)
		default:
			if c < 0x20 || c >= 0x7f {
				out = append(out, '\\')
				out = append(out, []byte(strconv.FormatInt(int64(c)|0o1000, 8))[1:]...)
				continue
			}
			out = append(out, c)
		}
	}
	return string(append(out, '"'))
}

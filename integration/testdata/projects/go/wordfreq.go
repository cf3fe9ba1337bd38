// Package wordfreq counts the words of a text.
package wordfreq

import (
	"sort"
	"strings"
)

// Count is how often one word appears.
type Count struct {
	Word string
	N    int
}

// Top returns the n most frequent words of text, most frequent first,
// ties in alphabetical order; words are compared without case.
func Top(text string, n int) []Count {
	counts := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '\'')
	}) {
		counts[w]++
	}
	out := make([]Count, 0, len(counts))
	for w, c := range counts {
		out = append(out, Count{w, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Word < out[j].Word
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

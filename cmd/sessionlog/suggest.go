package main

import (
	"flag"
	"regexp"
	"strings"
)

// closest returns the candidate nearest word — within two edits, or one
// for short words, or one word a prefix of the other — or "" when none is
// near: what a "did you mean" names.
func closest(word string, candidates []string) string {
	best, bestD := "", 3
	if len(word) <= 3 {
		bestD = 2
	}
	for _, c := range candidates {
		d := editDistance(word, c)
		if len(word) >= 3 && (strings.HasPrefix(c, word) || strings.HasPrefix(word, c)) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, a swap of two
// neighbours counting once (the commonest typo).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

var undefinedFlag = regexp.MustCompile(`flag provided but not defined: -+(\S+)`)

// flagHint is " (did you mean -name?)" for a parse error naming a flag fs
// does not define, or "".
func flagHint(fs *flag.FlagSet, err error) string {
	m := undefinedFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := closest(m[1], names); c != "" {
		return " (did you mean -" + c + "?)"
	}
	return ""
}

package commands

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
)

// CompleteCmd is the hidden command the completion scripts run at each
// <Tab>. It is a passthrough command, so every word after "__complete"
// reaches it untouched (flags included):
//
//	jsctl __complete bash [TEXT]          the line comes from COMP_LINE and COMP_POINT, as bash
//	                                      sets them; TEXT is the text bash will replace (its $2;
//	                                      without it, the whole word under the cursor)
//	jsctl __complete zsh|fish WORD...     the unquoted words after "jsctl"; the last one is the
//	                                      word under the cursor (may be empty)
//
// It prints one candidate per line ("VALUE<Tab>DESCRIPTION" for zsh and
// fish; for bash the text that replaces TEXT, quoted for the shell), then a
// directive line: ":values" (just the candidates), ":files" or ":dirs"
// (let the shell complete paths). It never fails: a problem means no
// candidates. Completing commands and flags never contacts a server;
// stream, consumer and scope names are looked up within a short budget.
type CompleteCmd struct {
	Args []string `arg:"" optional:"" help:"Shell, then the words of the line."`
}

// Run prints the candidates.
func (c *CompleteCmd) Run(ctx context.Context, env *Env, kctx *kong.Context) error {
	if len(c.Args) == 0 {
		return nil
	}
	shell, rest := c.Args[0], c.Args[1:]
	comp := &completer{app: kctx.Model, env: env, ctx: ctx, budget: completeBudget(os.Getenv(completeBudgetEnv))}
	defer comp.close()
	switch shell {
	case "bash":
		line, ok := os.LookupEnv("COMP_LINE")
		if !ok {
			line = "jsctl " + strings.Join(rest, " ")
			rest = nil
		}
		point := len(line)
		if p, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && p >= 0 && p < point {
			point = p
		}
		text := ""
		hasText := len(rest) > 0
		if hasText {
			text = rest[len(rest)-1]
		}
		return completeBash(env, comp, line[:point], text, hasText)
	case "zsh", "fish":
		words, cur := rest, ""
		if len(rest) > 0 {
			words, cur = rest[:len(rest)-1], rest[len(rest)-1]
		}
		cands, dir := comp.complete(words, cur)
		for _, cand := range cands {
			if cand.Desc != "" {
				fmt.Fprintf(env.Stdout, "%s\t%s\n", oneLine(cand.Value), oneLine(cand.Desc))
			} else {
				fmt.Fprintln(env.Stdout, oneLine(cand.Value))
			}
		}
		fmt.Fprintln(env.Stdout, dir)
	}
	return nil
}

// completeBash completes for bash. line is the command line up to the
// cursor; text is what bash will replace (bash splits words at
// COMP_WORDBREAKS such as '=' and ':' and starts the text after an open
// quote, so text may be only the end of the word under the cursor).
func completeBash(env *Env, comp *completer, line, text string, hasText bool) error {
	words, raw := shellWords(line)
	if len(words) == 0 {
		fmt.Fprintln(env.Stdout, directiveValues)
		return nil
	}
	words = words[1:] // the program name
	cur := ""
	if len(words) > 0 {
		cur = words[len(words)-1]
		words = words[:len(words)-1]
	}
	// keep is the raw start of the word that bash leaves in place.
	keep := ""
	if hasText && strings.HasSuffix(raw, text) {
		keep = raw[:len(raw)-len(text)]
	}
	keepVal, quote := unquoteFragment(keep)
	cands, dir := comp.complete(words, cur)
	for _, cand := range cands {
		rest, ok := strings.CutPrefix(cand.Value, keepVal)
		if !ok {
			continue
		}
		if q, ok := bashQuote(rest, quote); ok {
			fmt.Fprintln(env.Stdout, q)
		}
	}
	fmt.Fprintln(env.Stdout, dir)
	return nil
}

// shellWords splits a partial command line the way a POSIX shell would
// (quotes and backslashes; no expansions). It returns the unquoted words and
// the raw text of the last one, which is empty, and an empty word is added,
// when the line ends in a blank outside quotes.
func shellWords(line string) (words []string, lastRaw string) {
	var (
		cur     strings.Builder
		inWord  bool
		start   int
		quote   byte
		escaped bool
	)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case escaped:
			cur.WriteByte(ch)
			escaped = false
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case quote == '"':
			switch {
			case ch == '"':
				quote = 0
			case ch == '\\' && i+1 < len(line) && strings.IndexByte("$`\"\\\n", line[i+1]) >= 0:
				i++
				cur.WriteByte(line[i])
			default:
				cur.WriteByte(ch)
			}
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			continue
		case ch == '\\':
			escaped = true
		case ch == '\'' || ch == '"':
			quote = ch
		default:
			cur.WriteByte(ch)
		}
		if !inWord {
			inWord, start = true, i
		}
	}
	if !inWord {
		return append(words, ""), ""
	}
	return append(words, cur.String()), line[start:]
}

// unquoteFragment unquotes the start of a word and says which quote, if
// any, is still open at its end.
func unquoteFragment(s string) (string, byte) {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				b.WriteByte(ch)
			}
		case quote == '"':
			if ch == '"' {
				quote = 0
			} else if ch == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				i++
				b.WriteByte(s[i])
			} else {
				b.WriteByte(ch)
			}
		case ch == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case ch == '\'' || ch == '"':
			quote = ch
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), quote
}

// bashQuote writes s for insertion where the cursor is: inside an open
// quote (bash closes it), or bare with backslashes before the characters
// the shell would otherwise interpret. It reports false when s cannot be
// written inside the open quote.
func bashQuote(s string, quote byte) (string, bool) {
	switch quote {
	case '\'':
		return s, !strings.Contains(s, "'")
	case '"':
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if strings.IndexByte("$`\"\\", s[i]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(s[i])
		}
		return b.String(), true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(" \t\n\\'\"$`&|;<>()[]{}*?!#~^", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// oneLine keeps a candidate on its line of the protocol.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(s)
}

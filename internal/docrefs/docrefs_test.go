// Package docrefs holds the test that keeps references to the docs true:
// every file of the repository that points to a doc (Go, Markdown, C,
// shell and the Makefile) names a file that exists, and, where it names
// a section, a section the doc has.
//
// A reference is one of (docs/measuring.md, "Doc references"):
//
//   - docs/<name>.md, from anywhere, optionally followed by a comma and a
//     heading of that file in double quotes; the quotation may run over
//     line breaks (with a comment's "//", "*" or "#"), read as single
//     spaces;
//   - a Markdown link to a *.md file, relative to the file it is in,
//     optionally with "#anchor", the anchor being a heading's GitHub
//     anchor, in a *.md file.
//
// Headings are the lines of a *.md file that begin with one to six "#"
// and a space, outside fenced code blocks.
package docrefs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docRef is docs/<name>.md where no path character comes before it,
// optionally followed by , "SECTION" (the quotation may hold line breaks).
var docRef = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_-]+\.md)(?:,\s*"([^"]*)")?`)

// mdLink is a Markdown link to a relative *.md file, with an optional
// anchor.
var mdLink = regexp.MustCompile(`\]\(([^)\s#:]+\.md)(?:#([^)\s]*))?\)`)

// lineBreak is a line break inside a quotation, with the indentation and
// the comment marker of the next line (Go's "//", C's "*", shell's "#").
var lineBreak = regexp.MustCompile(`\s*\n\s*(?:(?://|\*|#)\s*)?`)

// scanned says whether a file's references are checked: sources and docs.
func scanned(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".md", ".c", ".h", ".sh":
		return true
	}
	return name == "Makefile"
}

// skipDir says which directories hold no sources of ours: hidden ones,
// build outputs and test data.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "bin" || name == "lib" || name == "testdata" || name == "node_modules"
}

// headings returns the headings of a Markdown text, outside fenced code.
func headings(text string) []string {
	var hs []string
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if n := len(line) - len(h); n > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		hs = append(hs, strings.TrimSpace(strings.TrimRight(strings.TrimSpace(h), "#")))
	}
	return hs
}

// anchor is GitHub's anchor of a heading: lower case, Markdown's code
// marks and punctuation dropped, spaces as "-".
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// check returns what is wrong with the references in the tree at root,
// one line each, as FILE:LINE: PROBLEM.
func check(root string) ([]string, error) {
	docs := map[string][]string{} // a Markdown file, by path from root: its headings
	read := func(rel string) ([]string, bool) {
		if hs, ok := docs[rel]; ok {
			return hs, true
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, false
		}
		docs[rel] = headings(string(b))
		return docs[rel], true
	}
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		isMD := strings.HasSuffix(path, ".md")
		if !scanned(d.Name()) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		at := func(off int) string {
			return fmt.Sprintf("%s:%d", rel, 1+strings.Count(text[:off], "\n"))
		}
		for _, m := range docRef.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			hs, ok := read(target)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s does not exist", at(m[2]), target))
				continue
			}
			if m[4] < 0 {
				continue
			}
			section := lineBreak.ReplaceAllString(text[m[4]:m[5]], " ")
			if !slices.Contains(hs, section) {
				problems = append(problems, fmt.Sprintf("%s: %s has no section %q", at(m[2]), target, section))
			}
		}
		if !isMD {
			return nil
		}
		for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
			link := text[m[2]:m[3]]
			target := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), link)))
			hs, ok := read(target)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: link to %s: %s does not exist", at(m[2]), link, target))
				continue
			}
			if m[4] < 0 || m[4] == m[5] {
				continue
			}
			a := text[m[4]:m[5]]
			if !slices.ContainsFunc(hs, func(h string) bool { return anchor(h) == a }) {
				problems = append(problems, fmt.Sprintf("%s: link to %s#%s: no heading of %s has that anchor", at(m[2]), link, a, target))
			}
		}
		return nil
	})
	return problems, err
}

// TestDocReferences checks the repository itself.
func TestDocReferences(t *testing.T) {
	problems, err := check(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckFindsBrokenReferences runs the check on small trees, so that it
// is seen to fail for each kind of broken reference, and to pass the
// forms that are right. The references are built from pieces so that the
// repository's own check does not read them.
func TestCheckFindsBrokenReferences(t *testing.T) {
	const d = "docs/"
	guide := "# Guide\n\n## Waits on a shared host\n\n```\n# not a heading\n```\n\n### `core.Relayer` and lanes\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string // a substring of each problem, in order
	}{
		{"file and section exist",
			map[string]string{"a.go": "// (" + d + "guide.md, \"Waits on a shared host\")\n"}, nil},
		{"section over a comment's line break",
			map[string]string{"a.go": "// (" + d + "guide.md, \"Waits on a\n//   shared host\")\n"}, nil},
		{"section over a C comment's line break",
			map[string]string{"a.c": "/*\n * (" + d + "guide.md, \"Waits on\n * a shared host\")\n */\n"}, nil},
		{"missing file from a Makefile",
			map[string]string{"Makefile": "# (" + d + "gone.md, \"Waits on a\n# shared host\")\n"},
			[]string{"Makefile:1: " + d + "gone.md does not exist"}},
		{"missing section from a shell script",
			map[string]string{"x.sh": "# " + d + "guide.md, \"Waits\"\n"},
			[]string{"x.sh:1: " + d + "guide.md has no section \"Waits\""}},
		{"no section named",
			map[string]string{"a.go": "// see " + d + "guide.md.\n"}, nil},
		{"missing file",
			map[string]string{"a.go": "// (" + d + "gone.md)\n"},
			[]string{"a.go:1: " + d + "gone.md does not exist"}},
		{"missing section",
			map[string]string{"a.go": "package a\n\n// (" + d + "guide.md, \"Waits on a host\")\n"},
			[]string{"a.go:3: " + d + "guide.md has no section \"Waits on a host\""}},
		{"a heading inside a code fence is no section",
			map[string]string{"x.md": "(" + d + "guide.md, \"not a heading\")\n"},
			[]string{"has no section \"not a heading\""}},
		{"a longer path is not a doc reference",
			map[string]string{"a.go": "// providers/" + d + "gone.md\n"}, nil},
		{"links and anchors",
			map[string]string{d + "x.md": "[g](guide.md) [w](guide.md#waits-on-a-shared-host) [r](guide.md#corerelayer-and-lanes)\n"}, nil},
		{"broken link",
			map[string]string{d + "x.md": "[g](gone.md)\n"},
			[]string{"link to gone.md: " + d + "gone.md does not exist"}},
		{"broken anchor",
			map[string]string{"README.md": "[g](" + d + "guide.md#waits)\n"},
			[]string{"README.md:1: link to " + d + "guide.md#waits: no heading"}},
		{"skipped directories",
			map[string]string{"bin/a.md": "[g](gone.md)\n", "x/testdata/a.go": "// " + d + "gone.md\n"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{d + "guide.md": guide}
			for k, v := range c.files {
				files[k] = v
			}
			for name, text := range files {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			problems, err := check(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(c.want) {
				t.Fatalf("problems %q, want %d like %q", problems, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %q, want it to say %q", problems[i], w)
				}
			}
		})
	}
}

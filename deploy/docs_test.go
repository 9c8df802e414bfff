package deploy_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/usersync/usersync/schema"
)

// The operator's and analysts' docs, and the README, whose commands are
// checked.
var docs = []string{"README.md", "docs/operations.md", "docs/analysts.md"}

// codeBlock is a fenced block of a Markdown file.
type codeBlock struct {
	lang string
	line int // of the opening fence, 1-based
	text string
}

func codeBlocks(md string) []codeBlock {
	var out []codeBlock
	var cur *codeBlock
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				cur.text += line + "\n"
			}
			continue
		}
		if cur != nil {
			out = append(out, *cur)
			cur = nil
			continue
		}
		lang, _, _ := strings.Cut(strings.TrimPrefix(trimmed, "```"), " ")
		cur = &codeBlock{lang: lang, line: i + 1}
	}
	return out
}

// shellLines returns a block's command lines: continuations joined, prompts
// dropped.
func shellLines(text string) []string {
	var out []string
	cur := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, cur+line)
		cur = ""
	}
	return out
}

// TestDocCommands checks every usersync invocation in the docs' shell and
// plain code blocks: the command exists and takes each flag given.
func TestDocCommands(t *testing.T) {
	t.Parallel()
	for _, doc := range docs {
		seen := 0
		for _, b := range codeBlocks(readFile(t, doc)) {
			switch b.lang {
			case "", "sh", "bash", "shell", "console", "text":
			default:
				continue
			}
			for _, line := range shellLines(b.text) {
				for _, args := range shellInvocations(line) {
					seen++
					checkArgs(t, fmt.Sprintf("%s (block at line %d): %s", doc, b.line, strings.TrimSpace(line)), args)
				}
			}
		}
		if seen == 0 && doc == "docs/operations.md" {
			t.Errorf("%s: found no usersync command in its code blocks: is the parser broken?", doc)
		}
	}
}

var docVariable = regexp.MustCompile(`\bUSERSYNC_[A-Z0-9_]*[A-Z0-9]\b[*<]?`)

// TestDocVariables checks that every USERSYNC_ variable the operator's and
// analysts' docs name is one usersync reads.
func TestDocVariables(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"docs/operations.md", "docs/analysts.md"} {
		for _, m := range docVariable.FindAllString(readFile(t, doc), -1) {
			if strings.HasSuffix(m, "*") || strings.HasSuffix(m, "<") {
				continue // a family (USERSYNC_OAUTH_*), not a variable
			}
			checkEnvName(t, doc, m)
		}
	}
}

const (
	schemaBegin = "<!-- schema:begin (generated: make docs) -->"
	schemaEnd   = "<!-- schema:end -->"
)

// TestAnalystsDoc checks the ER diagram names every table analysts read, and
// that the markers of the generated table reference are in place.
func TestAnalystsDoc(t *testing.T) {
	t.Parallel()
	doc := readFile(t, "docs/analysts.md")
	var diagram string
	for _, b := range codeBlocks(doc) {
		if b.lang == "mermaid" && strings.HasPrefix(strings.TrimSpace(b.text), "erDiagram") {
			diagram = b.text
		}
	}
	if diagram == "" {
		t.Fatal("docs/analysts.md has no Mermaid erDiagram")
	}
	for _, tbl := range schema.Tables() {
		if !tbl.Analysts || tbl.View {
			continue
		}
		if !regexp.MustCompile(`(?m)^\s*` + tbl.Name + ` \{`).MatchString(diagram) {
			t.Errorf("docs/analysts.md: the ER diagram has no entity %s", tbl.Name)
		}
	}
	i, j := strings.Index(doc, schemaBegin+"\n"), strings.Index(doc, "\n"+schemaEnd)
	if i < 0 || j < i {
		t.Errorf("docs/analysts.md lacks the lines %q and %q, in that order", schemaBegin, schemaEnd)
	}
}

func withoutComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// environOf is env in os.Environ's form.
func environOf(env map[string]string) []string {
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	return kv
}

package report

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ckptcheck/ckptcheck/verify"
)

// letters writes n as a name without digits (digits would collapse).
func letters(n int) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			return string(b)
		}
	}
}

func TestMarkdownLimit(t *testing.T) {
	for _, n := range []int{0, 10, 2_000, 200_000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			fs := make([]verify.Finding, n)
			for i := range fs {
				// Distinct codes too, so the code table and the collapsed
				// lines grow with n.
				fs[i] = verify.Finding{Code: verify.Code("c_" + letters(i%500)), Severity: verify.Severity(i % 3),
					Key: "model.tower." + letters(i) + "." + strings.Repeat("w", 40), Message: "a message of some length"}
			}
			var inputs []verify.Input
			for i := range n / 10 {
				inputs = append(inputs, verify.Input{Path: "path/" + letters(i) + strings.Repeat("p", 60), Files: []string{"x"}})
			}
			r := verify.NewReport("validate", verify.Error, inputs, fs)
			out := render(t, "markdown", r, Options{})
			if len(out) > MarkdownLimit {
				t.Fatalf("%d findings: %d bytes, over %d", n, len(out), MarkdownLimit)
			}
			_, details, _ := strings.Cut(out, "<details>")
			listed := strings.Count(details, "\n- ")
			m := regexp.MustCompile(`_([\d,]+) findings? of ([\d,]+) left out`).FindStringSubmatch(out)
			left := 0
			if m != nil {
				left, _ = strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
				total, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
				if total != n {
					t.Errorf("says %d findings in all, want %d", total, n)
				}
			}
			if listed+left != n {
				t.Errorf("%d listed + %d said to be left out != %d findings", listed, left, n)
			}
			if n == 200_000 && (left == 0 || !strings.Contains(out, "inputs left out") || !strings.Contains(out, "left out of the findings above")) {
				t.Errorf("200,000 findings must leave some out, and say so:\n%s", out[len(out)-600:])
			}
			if n <= 10 && left != 0 {
				t.Errorf("a short report must be whole")
			}
		})
	}
}

func TestMdCode(t *testing.T) {
	tests := []struct {
		in   string
		cell bool
		want string
	}{
		{"plain", false, "`plain`"},
		{"a`b", false, "``a`b``"},
		{"`start", false, "`` `start ``"},
		{"a|b", true, "`a\\|b`"},
		{"a|b", false, "`a|b`"},
		{"x\ny", false, "`x\\ny`"},
		{"", false, ""},
		{" both ", false, "`  both  `"},
	}
	for _, tt := range tests {
		if got := mdCode(tt.in, tt.cell); got != tt.want {
			t.Errorf("mdCode(%q, %v) = %q, want %q", tt.in, tt.cell, got, tt.want)
		}
	}
}

// FuzzMdCode checks that a code span stays one span on one line: the
// fence is longer than any run of backticks inside, and in a table cell no
// pipe is left bare.
func FuzzMdCode(f *testing.F) {
	for _, s := range hostileNames {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, cell := range []bool{false, true} {
			out := mdCode(s, cell)
			if s == "" {
				continue
			}
			if strings.ContainsAny(out, "\r\n") {
				t.Fatalf("%q: line break in %q", s, out)
			}
			fence := len(out) - len(strings.TrimLeft(out, "`"))
			inner := out[fence : len(out)-fence]
			if strings.Contains(inner, strings.Repeat("`", fence)) || !strings.HasSuffix(out, strings.Repeat("`", fence)) {
				t.Fatalf("%q: fence of %d does not close only at the end: %q", s, fence, out)
			}
			if cell && regexp.MustCompile(`(^|[^\\])\|`).MatchString(strings.ReplaceAll(inner, `\\`, "")) {
				t.Fatalf("%q: bare pipe in a table cell: %q", s, out)
			}
		}
	})
}

func TestMarkdownHostile(t *testing.T) {
	out := render(t, "markdown", hostileReport(), Options{})
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "- ") && !strings.HasSuffix(line, "`") {
			t.Errorf("a finding line that is not a code span: %q", line)
		}
	}
	// Outside code spans, nothing of a name is left.
	outside := stripCodeSpans(out)
	for _, bad := range []string{"<script>", "<b>", "@octocat", "http://", "pwned", "injected"} {
		if strings.Contains(outside, bad) {
			t.Errorf("markdown holds %q outside code spans:\n%s", bad, outside)
		}
	}
}

// stripCodeSpans removes CommonMark code spans: a run of n backticks up to
// the next run of exactly n.
func stripCodeSpans(s string) string {
	var b strings.Builder
	run := func(i int) int {
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := run(i)
		end := -1
		for j := i + n; j < len(s); {
			if s[j] == '`' {
				m := run(j)
				if m == n {
					end = j + m
					break
				}
				j += m
				continue
			}
			j++
		}
		if end < 0 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

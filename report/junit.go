package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ckptcheck/ckptcheck/verify"
)

// JUnit writes a report as JUnit XML (the Ant/Jenkins schema that GitLab,
// Jenkins and most CI test views read): a test suite per finding family
// (format, index, config, keys, values, files); in it a test case per file
// in the file families (format, index, config, files), a test case per
// tensor with findings in a diff's keys and values. The
// findings that fail the run (errors, and what --fail-on adds) are the test
// case's one <failure>, several merged; the others (warnings, infos) are
// listed under the test case's name in the suite's <system-out>, the only
// place the schema has for them. opt.Clock and opt.Hostname stamp the
// suites.
func JUnit(w io.Writer, r *verify.Report, opt Options) error {
	now := time.Now
	if opt.Clock != nil {
		now = opt.Clock
	}
	host := opt.Hostname
	if host == "" {
		host = "localhost"
	}
	stamp := now().UTC().Format("2006-01-02T15:04:05")
	failAt := min(r.FailOn, verify.Error)
	suites := make(map[Family]*junitSuite)
	suite := func(f Family) *junitSuite {
		s := suites[f]
		if s == nil {
			s = &junitSuite{cases: map[string]*junitCase{}}
			suites[f] = s
		}
		return s
	}
	// The file families have a test case per file, passing or not; a diff
	// adds keys (and values) with a test case per tensor with findings.
	// Findings name files by their path; a hub cache's is the snapshot's,
	// so a file is also found by its base name when that is unambiguous.
	var files []string
	byBase := map[string]string{}
	for _, in := range r.Inputs {
		for _, name := range in.Files {
			p := inputFile(in, name)
			files = append(files, p)
			if _, dup := byBase[filepath.Base(p)]; dup {
				byBase[filepath.Base(p)] = ""
			} else {
				byBase[filepath.Base(p)] = p
			}
		}
	}
	for _, f := range []Family{FamilyFormat, FamilyIndex, FamilyConfig, FamilyFiles} {
		s := suite(f)
		for _, p := range files {
			s.get(p)
		}
	}
	if r.Command == "diff" || slices.ContainsFunc(r.Inputs, func(in verify.Input) bool { return in.Side != "" }) {
		suite(FamilyKeys)
		if r.Values != nil {
			suite(FamilyValues)
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		fam := FamilyOf(f.Code)
		perFile := fam != FamilyKeys && fam != FamilyValues
		name := junitName(r, f, perFile)
		if perFile && f.File != "" && !slices.Contains(files, name) && byBase[filepath.Base(name)] != "" {
			name = byBase[filepath.Base(name)]
		}
		c := suite(fam).get(name)
		if f.Severity >= failAt {
			c.failures = append(c.failures, f)
		} else {
			c.others = append(c.others, f)
		}
	}

	var b strings.Builder
	b.WriteString(xml.Header)
	b.WriteString("<testsuites>\n")
	id := 0
	for _, fam := range Families() {
		s := suites[fam]
		if s == nil {
			continue
		}
		failures := 0
		for _, c := range s.order {
			if len(c.failures) > 0 {
				failures++
			}
		}
		class := "ckptcheck." + r.Command + "." + string(fam)
		fmt.Fprintf(&b, "  <testsuite name=%s package=%s id=\"%d\" timestamp=\"%s\" hostname=%s tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"0\" time=\"0\">\n",
			xmlAttr(class), xmlAttr("ckptcheck."+r.Command), id, stamp, xmlAttr(host), len(s.order), failures)
		id++
		b.WriteString("    <properties>\n")
		props := [][2]string{{"command", r.Command}, {"fail_on", r.FailOn.String()}, {"verdict", Verdict(r)}}
		if opt.Version != "" {
			props = append(props, [2]string{"version", opt.Version})
		}
		for _, in := range r.Inputs {
			name := "input"
			if in.Side != "" {
				name = string(in.Side)
			}
			props = append(props, [2]string{name, in.Path})
		}
		for _, p := range props {
			fmt.Fprintf(&b, "      <property name=%s value=%s/>\n", xmlAttr(p[0]), xmlAttr(p[1]))
		}
		b.WriteString("    </properties>\n")
		var out strings.Builder
		for _, c := range s.order {
			fmt.Fprintf(&b, "    <testcase name=%s classname=%s time=\"0\"", xmlAttr(c.name), xmlAttr(class))
			if len(c.failures) == 0 {
				b.WriteString("/>\n")
			} else {
				var codes []string
				var text strings.Builder
				for _, f := range c.failures {
					if !slices.Contains(codes, string(f.Code)) {
						codes = append(codes, string(f.Code))
					}
					text.WriteString(junitLine(f) + "\n")
				}
				msg := quote(c.failures[0].Message)
				if len(c.failures) > 1 {
					msg = fmt.Sprintf("%s: %s", plural(len(c.failures), "finding"), strings.Join(codes, ", "))
				}
				fmt.Fprintf(&b, ">\n      <failure message=%s type=%s>%s</failure>\n    </testcase>\n",
					xmlAttr(msg), xmlAttr(strings.Join(codes, ",")), xmlText(text.String()))
			}
			if len(c.others) > 0 {
				out.WriteString(quote(c.name) + "\n")
				for _, f := range c.others {
					out.WriteString("  " + junitLine(f) + "\n")
				}
			}
		}
		fmt.Fprintf(&b, "    <system-out>%s</system-out>\n    <system-err></system-err>\n  </testsuite>\n", xmlText(out.String()))
	}
	b.WriteString("</testsuites>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

type junitSuite struct {
	order []*junitCase
	cases map[string]*junitCase
}

type junitCase struct {
	name             string
	failures, others []*verify.Finding
}

func (s *junitSuite) get(name string) *junitCase {
	c := s.cases[name]
	if c == nil {
		c = &junitCase{name: name}
		s.cases[name] = c
		s.order = append(s.order, c)
	}
	return c
}

// junitName is the test case a finding belongs to: its file in the file
// families, its tensor in the others, else the input it is about.
func junitName(r *verify.Report, f *verify.Finding, perFile bool) string {
	switch {
	case f.File != "" && (perFile || f.Key == ""):
		return f.File
	case f.Key != "" && !perFile:
		return f.Key
	}
	var paths []string
	for _, in := range r.Inputs {
		if f.Side == "" || in.Side == f.Side {
			paths = append(paths, in.Path)
		}
	}
	if len(paths) == 0 {
		return r.Command
	}
	return strings.Join(paths, " → ")
}

// junitLine is one finding in a failure or in system-out.
func junitLine(f *verify.Finding) string {
	return f.Severity.String() + " " + string(f.Code) + ": " + findingLine(*f, f.Key)
}

// inputFile is the path of one of an input's files as findings name it:
// the name beside the index, in the directory, or beside the file given.
func inputFile(in verify.Input, name string) string {
	dir := in.Path
	switch {
	case in.Index != "":
		dir = filepath.Dir(in.Index)
	case strings.HasSuffix(in.Path, ".safetensors"), strings.HasSuffix(in.Path, ".json"):
		dir = filepath.Dir(in.Path)
	}
	return filepath.Join(dir, name)
}

// xmlAttr is a quoted XML attribute value; control characters in names are
// escaped first (XML 1.0 cannot hold most of them at all).
func xmlAttr(s string) string { return `"` + xmlText(s) + `"` }

func xmlText(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		body, nl := strings.CutSuffix(line, "\n")
		xml.EscapeText(&b, []byte(quote(body)))
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

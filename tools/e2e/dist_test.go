package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// actionStep is a step of action.yml: its id, its env mapping and its run
// script.
type actionStep struct {
	id, run string
	env     map[string]string
}

// readAction reads the parts of action.yml the test runs: the inputs'
// defaults and the steps. It knows the shapes action.yml uses (block
// scalars for run, one-line values elsewhere), not YAML in general.
func readAction(t *testing.T) (defaults map[string]string, steps []actionStep) {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defaults = map[string]string{}
	var section, input string
	var step *actionStep
	var inRun, inEnv bool
	kv := regexp.MustCompile(`^(\s*)(- )?([\w-]+):\s*(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if inRun {
			if strings.HasPrefix(line, "        ") || strings.TrimSpace(line) == "" {
				step.run += strings.TrimPrefix(line, "        ") + "\n"
				continue
			}
			inRun = false
		}
		m := kv.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, dash, key, value := len(m[1]), m[2] != "", m[3], strings.Trim(m[4], `"`)
		switch {
		case indent == 0:
			section = key
		case section == "inputs" && indent == 2:
			input = key
		case section == "inputs" && indent == 4 && key == "default":
			defaults[input] = value
		case section == "runs" && dash:
			steps = append(steps, actionStep{env: map[string]string{}})
			step = &steps[len(steps)-1]
			inEnv = false
			if key == "id" {
				step.id = value
			}
		case step != nil && indent == 6 && key == "id":
			step.id = value
		case step != nil && indent == 6 && key == "env":
			inEnv = true
		case step != nil && indent == 6 && key == "run" && value == "|":
			inRun, inEnv = true, false
		case step != nil && inEnv && indent == 8:
			step.env[key] = value
		case step != nil && indent == 6:
			inEnv = false
		}
	}
	return defaults, steps
}

// TestGitHubAction runs the action's own script as the runner would: the
// inputs through the step's env mapping, ckptcheck on PATH, the step
// summary and output files set.
func TestGitHubAction(t *testing.T) {
	needE2E(t)
	defaults, steps := readAction(t)
	var run *actionStep
	for i := range steps {
		if steps[i].id == "run" {
			run = &steps[i]
		}
	}
	if run == nil || run.run == "" {
		t.Fatalf("action.yml has no step with id run and a script: %+v", steps)
	}
	input := regexp.MustCompile(`^\$\{\{ inputs\.([\w-]+) \}\}$`)
	dir := t.TempDir()
	pub, exp := writeScenario(t, dir)
	for _, tt := range []struct {
		name   string
		inputs map[string]string
		code   string
	}{
		{"diff", map[string]string{"command": "diff", "paths": pub + "\n" + exp, "args": "--values --rtol 1e-3", "html": filepath.Join(dir, "r.html")}, "1"},
		{"validate", map[string]string{"paths": pub}, "0"},
		{"never", map[string]string{"command": "diff", "paths": pub + " " + exp, "fail-on": "never"}, "0"},
		{"no path", map[string]string{"paths": filepath.Join(dir, "nothing here*")}, "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			summary, output := filepath.Join(dir, tt.name+".summary"), filepath.Join(dir, tt.name+".output")
			env := append(os.Environ(), "PATH="+filepath.Dir(ckptcheck)+":"+os.Getenv("PATH"),
				"GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output)
			for name, value := range run.env {
				m := input.FindStringSubmatch(value)
				if m == nil {
					t.Fatalf("env %s = %q is not an input", name, value)
				}
				v, ok := tt.inputs[m[1]]
				if !ok {
					v = defaults[m[1]]
				}
				env = append(env, name+"="+v)
			}
			cmd := exec.Command("bash", "-e", "-c", run.run)
			cmd.Env = env
			out, _ := cmd.CombinedOutput()
			got, _ := os.ReadFile(output)
			if string(got) != "exit-code="+tt.code+"\n" || cmd.ProcessState.ExitCode() != atoi(tt.code) {
				t.Fatalf("output %q, exit %d, want exit-code=%s:\n%s", got, cmd.ProcessState.ExitCode(), tt.code, out)
			}
			if tt.code == "2" {
				return
			}
			if !strings.HasPrefix(string(out), "ckptcheck "+tt.inputs["command"]) && tt.inputs["command"] != "" {
				t.Errorf("not the github format:\n%s", out)
			}
			sum, _ := os.ReadFile(summary)
			if tt.name == "diff" {
				if !strings.Contains(string(out), "::error title=ckptcheck missing_key::") || !strings.HasPrefix(string(sum), "### ❌ ckptcheck diff") {
					t.Errorf("annotations or summary missing:\n%s\n%s", out, sum)
				}
				if _, err := os.Stat(tt.inputs["html"]); err != nil {
					t.Errorf("the html input: %v", err)
				}
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestContainerImage builds the image and runs it, where a container can
// run. The probe is the run itself: a container engine's client alone (a
// docker command with no daemon) is not enough.
func TestContainerImage(t *testing.T) {
	needE2E(t)
	engine := os.Getenv("ENGINE")
	if engine == "" {
		engine = "docker"
	}
	if _, err := exec.LookPath(engine); err != nil {
		t.Skipf("no container engine (%s): the image is not tested here", engine)
	}
	image := "ckptcheck:e2e"
	build := exec.Command("make", "image", "ENGINE="+engine, "IMAGE="+image)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "go build") && !strings.Contains(string(out), engine+" build") {
			t.Fatalf("make image: %v\n%s", err, out)
		}
		t.Skipf("%s cannot build images here, so no container can run: %s", engine, lastLine(string(out)))
	}
	version, err := exec.Command(engine, "run", "--rm", "--network=none", image, "--version").CombinedOutput()
	if err != nil {
		t.Skipf("%s cannot run a container here: %s", engine, lastLine(string(version)))
	}
	if !strings.HasPrefix(string(version), "ckptcheck ") {
		t.Fatalf("--version in the image: %q", version)
	}
	data, _ := filepath.Abs(filepath.Join(repoRoot, "testdata"))
	cmd := exec.Command(engine, "run", "--rm", "--network=none", "-v", data+":/data:ro", image, "diff", "published", "exported", "--format", "json")
	out, err := cmd.Output()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("diff in the image: %v (want exit 1)\n%s", err, out)
	}
	var rep struct {
		Summary struct{ Error int } `json:"summary"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || rep.Summary.Error != 1 {
		t.Errorf("diff in the image: %v %+v", err, rep)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

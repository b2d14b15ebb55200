package docscheck

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ckptcheck/ckptcheck/partition"
)

// blocks returns the fenced code blocks of a Markdown file with the given
// info string.
func blocks(t *testing.T, path, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```"+lang+"\n")
		if !ok {
			return out
		}
		block, tail, _ := strings.Cut(after, "```")
		out, rest = append(out, block), tail
	}
}

const guide = "../../docs/scale-out.md"

var shellVar = regexp.MustCompile(`\$\{\{ *matrix\.part *\}\}|\$\{([A-Z_]+):-([^}]*)\}|\$\{?([A-Z_]+)\}?`)

// diffArgs finds the ckptcheck diff command in a shell snippet and returns
// its arguments with variables expanded from env (${VAR:-default} as the
// shell does, ${{ matrix.part }} as matrix), up to the redirection.
func diffArgs(t *testing.T, script string, env map[string]string, matrix string) []string {
	t.Helper()
	script = strings.ReplaceAll(script, "\\\n", " ")
	_, cmd, ok := strings.Cut(script, "ckptcheck diff ")
	if !ok {
		t.Fatalf("no ckptcheck diff in %q", script)
	}
	cmd, _, _ = strings.Cut(cmd, ">")
	cmd = shellVar.ReplaceAllStringFunc(cmd, func(m string) string {
		if strings.HasPrefix(m, "${{") {
			return matrix
		}
		g := shellVar.FindStringSubmatch(m)
		if g[1] != "" {
			if v := env[g[1]]; v != "" {
				return v
			}
			return g[2]
		}
		return env[g[3]]
	})
	return strings.Fields(strings.ReplaceAll(cmd, `"`, ""))
}

// checkPartitionRun checks that a part's command has what merge needs and
// that --partition resolves, with the engine's environment, to part want
// of n.
func checkPartitionRun(t *testing.T, engine string, args []string, env map[string]string, want partition.Partition) {
	t.Helper()
	joined := " " + strings.Join(args, " ") + " "
	for _, need := range []string{" --values ", " --format json ", " --fail-on never "} {
		if !strings.Contains(joined, need) {
			t.Errorf("%s: the command lacks%s: %s", engine, need, joined)
		}
	}
	spec := ""
	for i, a := range args {
		if a == "--partition" && i+1 < len(args) {
			spec = args[i+1]
		}
	}
	p, err := partition.ParsePartition(spec, func(k string) string { return env[k] })
	if err != nil {
		t.Errorf("%s: %v", engine, err)
		return
	}
	if p.Index != want.Index || p.Count != want.Count {
		t.Errorf("%s: --partition %s is part %s, want %s", engine, spec, p, want)
	}
}

// TestKubernetesJobs decodes the guide's manifest strictly into batch/v1
// Jobs: an unknown or misspelt field, or a value of the wrong type, fails.
func TestKubernetesJobs(t *testing.T) {
	var docs []string
	for _, b := range blocks(t, guide, "yaml") {
		if strings.Contains(b, "kind: Job") {
			docs = append(docs, strings.Split(b, "\n---\n")...)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("%d Job documents in the guide, want the values Job and the merge Job", len(docs))
	}
	var jobs [2]batchv1.Job
	for i, d := range docs {
		if err := yaml.UnmarshalStrict([]byte(d), &jobs[i]); err != nil {
			t.Fatalf("Job %d: %v", i, err)
		}
		if jobs[i].APIVersion != "batch/v1" || jobs[i].Kind != "Job" {
			t.Errorf("Job %d: %s %s", i, jobs[i].APIVersion, jobs[i].Kind)
		}
		if p := jobs[i].Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
			t.Errorf("Job %d: restartPolicy %q, want Never (a Job's pods may not restart Always)", i, p)
		}
	}
	values, merge := jobs[0].Spec, jobs[1].Spec
	if values.CompletionMode == nil || *values.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("the values Job is not completionMode: Indexed")
	}
	if values.Completions == nil || values.Parallelism == nil || *values.Parallelism != *values.Completions {
		t.Errorf("completions and parallelism should both be the partition count")
	}
	n := int(*values.Completions)
	c := values.Template.Spec.Containers[0]
	script := strings.Join(c.Command, " ")
	for _, i := range []int{0, n - 1} {
		env := map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}
		checkPartitionRun(t, "kubernetes", diffArgs(t, script, env, ""), env, partition.Partition{Index: i, Count: n})
	}
	if !strings.Contains(script, "/reports/part-$JOB_COMPLETION_INDEX.json") {
		t.Errorf("each index should write its own report: %s", script)
	}
	mergeScript := strings.Join(merge.Template.Spec.Containers[0].Command, " ")
	if !strings.Contains(mergeScript, "ckptcheck merge /reports/part-*.json") {
		t.Errorf("the merge Job does not merge the reports: %s", mergeScript)
	}
	// Both Jobs use the one reports claim.
	claim := func(s batchv1.JobSpec, name string) string {
		for _, v := range s.Template.Spec.Volumes {
			if v.Name == name && v.PersistentVolumeClaim != nil {
				return v.PersistentVolumeClaim.ClaimName
			}
		}
		return ""
	}
	if a, b := claim(values, "reports"), claim(merge, "reports"); a == "" || a != b {
		t.Errorf("the values Job writes reports to claim %q, the merge Job reads %q", a, b)
	}
}

func TestSlurmArray(t *testing.T) {
	var script string
	for _, b := range blocks(t, guide, "bash") {
		if strings.Contains(b, "#SBATCH --array=") {
			script = b
		}
	}
	m := regexp.MustCompile(`#SBATCH --array=0-(\d+)\n`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("no 0-based array in %q", script)
	}
	last, _ := strconv.Atoi(m[1])
	n := last + 1
	for _, id := range []int{0, 5, last} {
		env := map[string]string{"SLURM_ARRAY_TASK_ID": strconv.Itoa(id), "SLURM_ARRAY_TASK_MIN": "0",
			"SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": strconv.Itoa(n)}
		checkPartitionRun(t, "slurm", diffArgs(t, script, env, ""), env, partition.Partition{Index: id, Count: n})
	}
	// The re-run of one part, as the guide says: sbatch --array=3 --export=ALL,PART=3.
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_STEP": "1",
		"SLURM_ARRAY_TASK_COUNT": "1", "PART": "3"}
	checkPartitionRun(t, "slurm re-run", diffArgs(t, script, env, ""), env, partition.Partition{Index: 3, Count: n})
	delete(env, "PART")
	args := diffArgs(t, script, env, "")
	if _, err := partition.ParsePartition(args[slicesIndex(args, "--partition")+1], func(k string) string { return env[k] }); err == nil {
		t.Error("a task re-run alone without PART resolved to a partition; it must be refused")
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestGitHubMatrix(t *testing.T) {
	wf := ciDoc(t, "jobs:")
	jobs := wf["jobs"].(map[string]any)
	values := jobs["values"].(map[string]any)
	parts := values["strategy"].(map[string]any)["matrix"].(map[string]any)["part"].([]any)
	script := values["steps"].([]any)[0].(map[string]any)["run"].(string)
	for i := range parts {
		part := fmt.Sprint(parts[i])
		checkPartitionRun(t, "github", diffArgs(t, script, nil, part), nil, partition.Partition{Index: i, Count: len(parts)})
	}
	merge := jobs["merge"].(map[string]any)
	if merge["needs"] != "values" {
		t.Errorf("the merge job needs %v, want values", merge["needs"])
	}
}

func TestGitLabParallel(t *testing.T) {
	ci := ciDoc(t, "parallel:")
	values := ci["ckptcheck-values"].(map[string]any)
	n := int(values["parallel"].(float64))
	script := values["script"].([]any)[0].(string)
	for _, node := range []int{1, n} {
		env := map[string]string{"CI_NODE_INDEX": strconv.Itoa(node), "CI_NODE_TOTAL": strconv.Itoa(n)}
		checkPartitionRun(t, "gitlab", diffArgs(t, script, env, ""), env, partition.Partition{Index: node - 1, Count: n})
	}
	needs := ci["ckptcheck-merge"].(map[string]any)["needs"].([]any)
	if len(needs) != 1 || needs[0] != "ckptcheck-values" {
		t.Errorf("the merge job needs %v", needs)
	}
}

// ciDoc decodes the guide's YAML block that holds marker.
func ciDoc(t *testing.T, marker string) map[string]any {
	t.Helper()
	for _, b := range blocks(t, guide, "yaml") {
		if strings.Contains(b, marker) && !strings.Contains(b, "kind: Job") {
			var m map[string]any
			if err := yaml.Unmarshal(bytes.TrimSpace([]byte(b)), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no YAML block with %q in %s", marker, guide)
	return nil
}

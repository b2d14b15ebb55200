// Package partition shares a command's work out over n runs and checks
// the parts when they come back.
//
// A Partition is part i of n. ParsePartition reads "i/n", or "auto/n",
// which takes i from a job array's environment (Slurm, Kubernetes Indexed
// Jobs, GitLab's parallel jobs). Assign puts weighted work items (logical
// tensors by the bytes they read, files by their size) into n bins
// deterministically, from the items' names and weights alone, so that n
// machines listing the same items cover each exactly once; Select is one
// partition's share.
//
// When the parts are merged (verify's partition reports, manifest's
// partial manifests), Check validates what each part says of itself —
// its partition, the run's item count, the places of the items it did,
// the findings only partition 0 carries — against the limits and the data
// present, and says which partitions are there, given twice or missing.
// It knows nothing of reports or manifests: it sits below both.
package partition

package verify

import "github.com/ckptcheck/ckptcheck/partition"

// Partition is part Index of Count of a run's work (see package
// partition); the zero Partition is the whole work.
type Partition = partition.Partition

// An Item is a unit of work to assign to a partition (see
// partition.Assign).
type Item = partition.Item

// newPartitionInfo is a partition report's PartitionInfo: the run's
// fingerprint, how many findings first are structural, the run's item
// count, the work covered and the ignores.
func newPartitionInfo(p Partition, fingerprint string, structural, items int, covered []Covered, ignores []Ignore) *PartitionInfo {
	if covered == nil {
		covered = []Covered{}
	}
	info := &PartitionInfo{Partition: p, Fingerprint: fingerprint, Structural: structural, Items: items, Tensors: covered}
	for _, ig := range ignores {
		info.Ignore = append(info.Ignore, ig.String())
	}
	return info
}

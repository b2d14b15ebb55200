package verify

import "github.com/ckptcheck/ckptcheck/partition"

// Partition is part Index of Count of a run's work (see package
// partition); the zero Partition is the whole work.
type Partition = partition.Partition

// An Item is a unit of work to assign to a partition (see
// partition.Assign).
type Item = partition.Item

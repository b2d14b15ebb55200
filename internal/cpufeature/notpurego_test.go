//go:build !purego

package cpufeature

const purego = false

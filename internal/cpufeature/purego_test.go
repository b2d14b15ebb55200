//go:build purego

package cpufeature

const purego = true

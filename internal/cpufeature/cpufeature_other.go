//go:build !amd64 || purego

package cpufeature

// detect finds no x86-64 extension: the assembly is amd64 only, and purego
// builds leave it out.
func detect() Set { return Set{} }

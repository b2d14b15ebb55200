//go:build linux

package values

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ckptcheck/ckptcheck/safetensors"
)

// BenchmarkKernel times the statistics of one block of 2^18 elements that
// all differ (1 to 4 ulps; the F32 side is the exact upcast), one worker,
// bytes in cache: the loops alone, in ns an element.
func BenchmarkKernel(b *testing.B) {
	n := int(blockElems)
	for _, pe := range [][2]safetensors.DType{{safetensors.BF16, safetensors.BF16}, {safetensors.BF16, safetensors.F32},
		{safetensors.F16, safetensors.F16}, {safetensors.F16, safetensors.F32}, {safetensors.F32, safetensors.F32}, {safetensors.F8_E4M3, safetensors.BF16}} {
		p, e := kernelCase(pe[0], pe[1], n, 1, false)
		for _, k := range []struct {
			name     string
			portable bool
		}{{"default", false}, {"portable", true}} {
			b.Run(fmt.Sprintf("%s-%s/%s", pe[0], pe[1], k.name), func(b *testing.B) {
				defer UseKernels(k.portable)()
				var kern kernel
				b.SetBytes(int64(len(p) + len(e)))
				// The thread's CPU time as well: the machine is shared, and
				// time spent waiting for a core is not the loops'.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0 := threadCPU()
				for b.Loop() {
					kern.compare(pe[0], pe[1], p, e, 0, uint64(n), Tolerance{Rtol: 1e-1})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
				b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N)/float64(n), "cpu-ns/elem")
			})
		}
	}
}

// threadCPU is the calling thread's CPU time in ns (the thread must be
// locked to its goroutine).
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return ts.Nano()
}

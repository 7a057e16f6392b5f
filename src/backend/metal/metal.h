/*
 * metal.h - the Metal backend (Apple GPUs): what is here and what is not.
 *
 * Here, on every platform: the MSL dialect of the GPU emitter
 * (gpu/dialect_metal.c) and its offline target, "metal-source"
 * (offline.c, tack.metal.source), which gives the MSL a Metal device
 * would compile.  No Metal compiler runs off macOS, so the tests check
 * that MSL by compiling it as C++ against a header of our own that
 * declares the Metal types and functions it uses (tests/metal/), with
 * Metal's address spaces as clang address spaces: see docs/devices.md
 * for how far that goes.
 *
 * Not here: the driver, which is built only on macOS and is a stub until
 * then.  Its design, for whoever writes it (the reference's):
 *
 *   - opened at run time through the Objective-C runtime (dlopen of
 *     Metal.framework and libobjc, objc_msgSend with typed casts), so
 *     libtack links no framework: MTLCreateSystemDefaultDevice, one
 *     MTLCommandQueue per device;
 *   - build: gpu_emit with gpu_dialect_metal, newLibraryWithSource with
 *     MTLCompileOptions' mathMode safe (fastMathEnabled NO, the dialect's
 *     build_options), newFunctionWithName(entry),
 *     newComputePipelineStateWithFunction;
 *   - launch: a command buffer and a compute encoder; setBytes for the
 *     pack at index 0 (the kernel's `constant` reference), setBuffer for
 *     each array at 1, 2, ... (the dialect's buffer attributes);
 *     dispatchThreads with threadsPerThreadgroup 256 (collective kernels
 *     need exactly 256), commit and waitUntilCompleted.  A launch owns its
 *     argument bytes, so variants need no dispatch lock; encoding happens
 *     under the device's lock;
 *   - memory: MTLBuffers in shared storage (Apple silicon's unified
 *     memory); handles are the buffers;
 *   - caps: no fp64, no 64-bit atomics (gpu_emit refuses both, and debug
 *     mode, naming them); maxThreadsPerThreadgroup,
 *     maxThreadgroupMemoryLength;
 *   - the disk-cache artifact: the MSL source with its entry name and
 *     pack layout (newLibraryWithSource again on load, which macOS's own
 *     shader cache makes fast), keyed by the device's name, the OS
 *     version and the options.
 */
#ifndef TACK_METAL_H
#define TACK_METAL_H

#include "backend/backend.h"

#endif

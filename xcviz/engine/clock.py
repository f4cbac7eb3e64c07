"""A monotonic nanosecond clock callable from nopython numba code.

Numba has no `time` support; the kernels need per-iteration timings, so this intrinsic
calls libc's `clock_gettime(CLOCK_MONOTONIC)` directly (a vDSO call, ~20 ns). It caches
like any other njit function because the symbol is resolved when the code is loaded.
"""
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_CLOCK_MONOTONIC = 1


@intrinsic
def monotonic_ns(typingctx):
    """Return CLOCK_MONOTONIC in nanoseconds as int64 (same clock as time.monotonic_ns)."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])
        ts = cgutils.alloca_once(builder, timespec)
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        builder.call(fn, [ir.Constant(ir.IntType(32), _CLOCK_MONOTONIC), ts])
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return sig, codegen

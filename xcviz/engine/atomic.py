"""Atomic fetch-and-add on an int64 array element, for dynamic work sharing in prange loops.

Numba's prange splits iterations statically; labels differ in cost by orders of magnitude, so
workers instead take the next label from a shared counter. An LLVM `atomicrmw add` keeps this
cacheable, unlike the ctypes-based thread-id helpers.
"""
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def fetch_add(typingctx, arr, idx, val):
    """Atomically add `val` to arr[idx] and return the previous value (int64 arrays only)."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None
    sig = types.int64(arr, idx, val)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        value = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, value, "seq_cst")

    return sig, codegen

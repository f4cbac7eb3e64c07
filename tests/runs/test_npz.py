"""runs.npz.pack writes what np.savez writes, as far as any reader can tell: np.load, zipfile and
the store's header reader (`_column_types`) give the same arrays, dtypes and shapes back; blobs
np.savez wrote (stores of older versions) and blobs pack wrote read alike."""
import io
import zipfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xcviz.runs.npz import pack
from xcviz.runs.sketch import Summary
from xcviz.runs.store import _column_types, _unpack

DTYPES = st.one_of(hnp.boolean_dtypes(), hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(),
                   hnp.floating_dtypes(), hnp.complex_number_dtypes(), hnp.unicode_string_dtypes(max_len=5),
                   hnp.byte_string_dtypes(max_len=5), hnp.datetime64_dtypes())
ARRAYS = hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
NAMES = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=12).filter(
    lambda name: name not in ("file", "allow_pickle"))  # np.savez's own arguments


def _savez(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for name, array in want.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape, name
        np.testing.assert_array_equal(got[name], array, err_msg=name)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(NAMES, ARRAYS, max_size=6), st.booleans())
def test_pack_reads_back_as_savez_does(arrays, fortran):
    if fortran:
        arrays = {k: np.asfortranarray(v) for k, v in arrays.items()}
    blob = pack(arrays)
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == [f"{k}.npy" for k in arrays]
    _same(_unpack(blob), _unpack(_savez(arrays)))
    _same(_unpack(blob), arrays)
    assert _column_types(blob) == _column_types(_savez(arrays))


def test_strided_and_scalar_arrays():
    arrays = {"step": np.arange(30)[::7], "scalar": np.array(2.5), "grid": np.arange(12.0).reshape(3, 4).T}
    _same(_unpack(pack(arrays)), arrays)


def test_object_arrays_go_to_savez():
    arrays = {"o": np.array([None, 1], dtype=object)}
    assert pack(arrays) == _savez(arrays)


def test_a_summary_packed_by_savez_still_unpacks():
    """A store written before pack existed holds summaries np.savez packed."""
    summary = Summary.of({"label": np.array([0, 0, 1]), "iteration": np.array([0, 1, 0]),
                          "objective": np.array([2.0, 1.0, 3.0]), "wall": np.array([0.1, 0.2, 0.3])})
    old = _savez({"fields": np.array(summary.fields, dtype=str), **summary.arrays})
    for blob in (old, summary.pack()):
        back = Summary.unpack(blob)
        assert back.fields == summary.fields
        _same(back.arrays, summary.arrays)

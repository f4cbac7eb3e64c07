"""xcviz._util.atomic_write: a write happens whole or not at all. A writer that raises (KeyboardInterrupt
too), a rename that fails and a process SIGKILLed midway all leave the previous file intact; the
failures a process survives leave no temporary file behind and raise the original error; the new
file's permissions are the ones asked for; the folder is fsynced after the rename; a sharded
folder's parts are synced before its manifest appears."""
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from xcviz._util.atomic_write import write_all_atomic, write_atomic
from xcviz.data.dataset import Dataset
from xcviz.data.shards import MANIFEST, write_shards
from xcviz.data.synthetic import generate


def _leftovers(folder, keep=("target",)):
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_writes_bytes_or_what_a_callback_writes(tmp_path):
    target = tmp_path / "target"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(str(target), lambda f: (f.write(b"sec"), f.write(b"ond")))
    assert target.read_bytes() == b"second"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("error", [ValueError("disk on fire"), KeyboardInterrupt()])
def test_a_writer_that_fails_midway_keeps_the_old_file_and_no_temporary(tmp_path, error):
    target = tmp_path / "target"
    target.write_bytes(b"old contents")

    def half_then_fail(f):
        f.write(b"new cont")
        f.flush()  # the partial bytes are on disk, in the temporary file
        assert _leftovers(tmp_path) != []
        raise error

    with pytest.raises(type(error)) as raised:
        write_atomic(target, half_then_fail)
    assert raised.value is error  # the original exception, not masked by the clean-up
    assert target.read_bytes() == b"old contents"
    assert _leftovers(tmp_path) == []


def test_a_failed_clean_up_does_not_mask_the_original_error(tmp_path):
    target = tmp_path / "target"

    def remove_own_temporary_then_fail(f):
        os.unlink(next(p for p in tmp_path.iterdir() if p.name.endswith(".tmp")))
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        write_atomic(target, remove_own_temporary_then_fail)
    assert _leftovers(tmp_path) == []


def test_a_rename_that_fails_leaves_no_temporary(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "inside").write_text("x")  # a non-empty folder cannot be replaced by a file
    with pytest.raises(OSError):
        write_atomic(target, b"new")
    assert (target / "inside").read_text() == "x"
    assert _leftovers(tmp_path) == []


def test_permissions_are_private_by_default_or_as_asked(tmp_path):
    old_umask = os.umask(0o077)  # the requested mode must not depend on the umask
    try:
        write_atomic(tmp_path / "private", b"a")
        write_atomic(tmp_path / "shared", b"b", mode=0o644)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o644


def test_the_file_and_then_its_folder_are_fsynced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write_atomic(tmp_path / "target", b"data")
    assert synced == [False, True]


# replaces argv[1] by new contents, stopping halfway (the first half flushed to the temporary
# file) until the test SIGKILLs it
_STOPS_HALFWAY = """
import os, sys, time
from xcviz._util.atomic_write import write_all_atomic, write_atomic
from xcviz.data.dataset import Dataset
from xcviz.data.shards import MANIFEST, write_shards
from xcviz.data.synthetic import generate
def half(f):
    f.write(b"N" * 1_000_000)
    f.flush()
    os.fsync(f.fileno())
    open(sys.argv[2], "w").close()
    time.sleep(600)
    f.write(b"N" * 1_000_000)
write_atomic(sys.argv[1], half)
"""

# rewrites argv[1] over and over with one of two large, distinct contents (the first write marks
# the file ready); the test SIGKILLs it at some point while it writes
_REWRITER = """
import sys
from xcviz._util.atomic_write import write_all_atomic, write_atomic
from xcviz.data.dataset import Dataset
from xcviz.data.shards import MANIFEST, write_shards
from xcviz.data.synthetic import generate
path, ready = sys.argv[1], sys.argv[2]
contents = [bytes([65 + k]) * 4_000_000 for k in range(2)]
k = 0
while True:
    write_atomic(path, lambda f: [f.write(contents[k % 2][i:i + 65536]) for i in range(0, 4_000_000, 65536)])
    if k == 0:
        open(ready, "w").close()
    k += 1
"""


def _kill_when_ready(tmp_path, script, delay):
    """Run `script` on tmp_path/target, SIGKILL it `delay` s after it creates tmp_path/ready."""
    target, ready = tmp_path / "target", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", script, str(target), str(ready)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert child.poll() is None, "the writer died before it was ready"
            assert time.monotonic() < deadline, "the writer was never ready"
            time.sleep(0.01)
        time.sleep(delay)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return _leftovers(tmp_path, ("target", "ready"))


def test_a_writer_killed_halfway_leaves_the_old_file_whole(tmp_path):
    (tmp_path / "target").write_bytes(b"O" * 1_500_000)
    leftovers = _kill_when_ready(tmp_path, _STOPS_HALFWAY, 0.0)
    assert (tmp_path / "target").read_bytes() == b"O" * 1_500_000
    # the half-written bytes are in the killed process's temporary file (nothing can remove it)
    (name,) = leftovers
    assert name.startswith(".target.") and name.endswith(".tmp")
    assert (tmp_path / name).read_bytes() == b"N" * 1_000_000


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_a_writer_killed_at_any_moment_leaves_the_old_file_or_the_new_one_whole(tmp_path, delay):
    leftovers = _kill_when_ready(tmp_path, _REWRITER, delay)
    assert (tmp_path / "target").read_bytes() in (b"A" * 4_000_000, b"B" * 4_000_000)
    assert all(name.startswith(".target.") and name.endswith(".tmp") for name in leftovers)


def test_a_sharded_folder_syncs_its_parts_before_its_manifest_appears(tmp_path, monkeypatch):
    """write_shards: every part file is fsynced before the manifest is renamed into place, so after
    a power cut a manifest never names a part that was still only in the page cache."""
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def recording_fsync(fd):
        events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        real_fsync(fd)

    def recording_replace(src, dst):
        events.append(("replace", os.path.basename(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    data = generate(40, 10, 3, avg_labels=1.5, avg_nnz=4, seed=1)
    shards = write_shards(data, tmp_path / "s", 3, test=Dataset(X=data.X[:5], Y=data.Y[:5]))
    parts = {p["file"] for p in shards.parts + shards.test_parts}
    assert len(parts) == 6
    manifest_in_place = events.index(("replace", MANIFEST))
    assert {name for kind, name in events[:manifest_in_place] if kind == "fsync"} >= parts


def test_a_killed_writers_old_temporary_file_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "target"
    old, young, other = (tmp_path / ".target.abc.tmp", tmp_path / ".target.def.tmp", tmp_path / ".other.ghi.tmp")
    for p in (old, young, other):
        p.write_bytes(b"half")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    os.utime(other, (two_hours_ago, two_hours_ago))
    write_atomic(target, b"whole")
    assert target.read_bytes() == b"whole"
    # the hour-old one of this target goes; a young one (a write in progress) and another file's stay
    assert _leftovers(tmp_path) == [".other.ghi.tmp", ".target.def.tmp"]


def test_several_files_are_replaced_only_when_every_one_was_written(tmp_path):
    """write_all_atomic: a content that fails midway (the second of three, a streamed one) leaves
    every target as it was and no temporary file; all written, all are replaced."""
    targets = [tmp_path / name for name in ("a.html", "b.csv", "c.json")]
    for t in targets:
        t.write_bytes(b"old " + t.name.encode())

    def failing(f):
        f.write(b"half of b")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_all_atomic({targets[0]: b"new a", targets[1]: failing, targets[2]: b"new c"})
    assert [t.read_bytes() for t in targets] == [b"old a.html", b"old b.csv", b"old c.json"]
    assert _leftovers(tmp_path, keep=[t.name for t in targets]) == []
    write_all_atomic({targets[0]: b"new a", targets[1]: lambda f: f.write(b"new b"), targets[2]: b"new c"}, mode=0o644)
    assert [t.read_bytes() for t in targets] == [b"new a", b"new b", b"new c"]
    assert [stat.S_IMODE(t.stat().st_mode) for t in targets] == [0o644] * 3
    assert _leftovers(tmp_path, keep=[t.name for t in targets]) == []

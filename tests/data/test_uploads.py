"""Your own file from the page (issue 40, item 5), without a browser: a safe name in the data
folder, never over another file, read as the command line reads it, refused with a located error
that does not quote the file, and bounded in size."""
import gzip
import os

import pytest

from xcviz.data.errors import DatasetFormatError
from xcviz.data.registry import load_files
from xcviz.data.uploads import MAX_UPLOAD_MB, UploadRefused, safe_stem, save_upload

SECRET = "TOKEN-9d2b71"
LIBSVM = b"1,2 1:0.5 3:1.0\n2 2:0.25\n1 1:1.0 2:0.5\n3 3:0.75\n"


@pytest.mark.parametrize("name, stem", [
    ("mine_train.txt", "mine"), ("../../etc/passwd", "passwd"), ("..\\..\\win\\x_test.txt.gz", "x"),
    ("  spaced name!.svm", "spaced-name"), ("....", "upload"), ("", "upload"), ("a" * 300 + ".txt", "a" * 40),
    ("<b>x<i>.txt", "b-x-i"), ("-rf_train.txt", "rf")])
def test_a_safe_stem_has_no_folder_part_and_no_odd_character(name, stem):
    assert safe_stem(name) == stem


def test_an_upload_is_kept_whole_under_a_new_name_and_reads_as_the_cli_reads_it(tmp_path):
    path = save_upload(LIBSVM, "../mine.txt", tmp_path)
    assert path == tmp_path / "mine_train.txt" and path.read_bytes() == LIBSVM
    train, _ = load_files(path)
    assert train.n == 4 and train.Y.shape[1] == 3
    again = save_upload(LIBSVM, "mine.txt", tmp_path)  # never over the first
    assert again.name == "mine-2_train.txt" and path.read_bytes() == LIBSVM
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine-2_train.txt", "mine_train.txt"]  # no temporary left
    test = save_upload(LIBSVM[:30], "mine_test.txt", tmp_path, "test")
    assert test.name == "mine_test.txt"
    with pytest.raises(UploadRefused, match="has a test file already"):
        save_upload(LIBSVM, "mine_test.txt", tmp_path, "test")
    with pytest.raises(UploadRefused, match="upload other_train.txt first"):
        save_upload(LIBSVM, "other_test.txt", tmp_path, "test")


def test_a_compressed_upload_keeps_its_compression_by_content(tmp_path):
    path = save_upload(gzip.compress(LIBSVM), "data.gz", tmp_path)
    assert path.name == "data_train.txt.gz"
    assert load_files(path)[0].n == 4


def test_a_bad_file_is_refused_with_its_line_and_without_its_content_and_leaves_nothing(tmp_path):
    bad = LIBSVM + f"1 4:x{SECRET}\n".encode()
    with pytest.raises(DatasetFormatError) as info:
        save_upload(bad, "../../mine.txt", tmp_path)
    text = str(info.value)
    assert text.startswith("mine.txt:5: ") and SECRET not in text and str(tmp_path) not in text, text
    assert list(tmp_path.iterdir()) == []


def test_size_and_emptiness_are_bounded(tmp_path):
    with pytest.raises(UploadRefused, match=f"larger than {MAX_UPLOAD_MB} MB"):
        save_upload(b"1 1:1\n" * (MAX_UPLOAD_MB * 2**20 // 6 + 1), "big.txt", tmp_path)
    with pytest.raises(UploadRefused, match="empty"):
        save_upload(b"\n \n", "empty.txt", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_appears_meanwhile_is_not_overwritten(tmp_path, monkeypatch):
    import xcviz.data.uploads as uploads

    real = os.link

    def racing(src, dst):  # another writer takes the name between the choice and the link
        open(dst, "wb").write(b"theirs")
        return real(src, dst)
    monkeypatch.setattr(uploads.os, "link", racing)
    with pytest.raises(UploadRefused, match="appeared in the data folder meanwhile"):
        save_upload(LIBSVM, "mine.txt", tmp_path)
    assert (tmp_path / "mine_train.txt").read_bytes() == b"theirs"
    assert [p.name for p in tmp_path.iterdir()] == ["mine_train.txt"]

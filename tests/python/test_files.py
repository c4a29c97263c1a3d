"""Files as the package reads and writes them (nystrom_kme._files): regular files only,
outputs that appear whole or not at all with errors naming the path given, and .npz
members read as numpy writes them, within their declared sizes."""

from __future__ import annotations

import errno
import io
import os
import stat
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from nystrom_kme._files import NpzArchive, atomic_write, non_regular_kind, open_regular, write_npy_vector


def test_regular_files_only(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    os.mkfifo(tmp_path / "p")
    os.symlink(tmp_path / "f", tmp_path / "link")
    assert non_regular_kind(str(tmp_path / "f")) is None
    assert non_regular_kind(str(tmp_path / "link")) is None  # links are followed
    assert non_regular_kind(str(tmp_path / "p")) == "a FIFO"
    assert non_regular_kind(str(tmp_path)) == "a directory"
    assert non_regular_kind("/dev/null") == "a character device"
    with open_regular(str(tmp_path / "link")) as f:
        assert f.read() == b"abc"
    # opening a FIFO with no writer would block: refused without blocking
    for path, kind in [(tmp_path / "p", "a FIFO"), (tmp_path, "a directory"), ("/dev/zero", "a character device")]:
        with pytest.raises(ValueError, match=f"not a regular file \\({kind}\\)"):
            open_regular(str(path))
    with pytest.raises(FileNotFoundError):
        open_regular(str(tmp_path / "missing"))


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    path = str(tmp_path / "out.csv")

    def half(f):
        f.write(b"1\n2\n")
        raise ValueError("bad line 3")

    with pytest.raises(ValueError, match="bad line 3"):
        atomic_write(path, half)
    assert os.listdir(tmp_path) == []
    (tmp_path / "out.csv").write_bytes(b"old")
    os.chmod(path, 0o640)
    for error in (ValueError("x"), KeyboardInterrupt()):

        def fail(f, error=error):
            f.write(b"new")
            raise error

        with pytest.raises(type(error)):
            atomic_write(path, fail)
        assert (tmp_path / "out.csv").read_bytes() == b"old" and os.listdir(tmp_path) == ["out.csv"]
    atomic_write(path, lambda f: f.write(b"new"))
    assert (tmp_path / "out.csv").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640  # an existing file keeps its mode
    atomic_write(str(tmp_path / "fresh"), lambda f: f.write(b""))
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "fresh").st_mode) == 0o666 & ~umask  # not mkstemp's 0600


def test_atomic_write_errors_name_the_path_given(tmp_path):
    missing = str(tmp_path / "nowhere" / "out.npy")
    with pytest.raises(FileNotFoundError) as err:
        atomic_write(missing, lambda f: None)
    assert err.value.filename == missing

    def disk_full(f):
        raise OSError(errno.ENOSPC, "No space left on device")

    path = str(tmp_path / "out.npy")
    with pytest.raises(OSError) as err:
        atomic_write(path, disk_full)
    assert err.value.errno == errno.ENOSPC and err.value.filename == path
    assert os.listdir(tmp_path) == []

    def input_missing(f):  # an input's error, raised while writing, keeps its own name
        with open(tmp_path / "input.csv"):
            pass

    with pytest.raises(FileNotFoundError) as err:
        atomic_write(path, input_missing)
    assert err.value.filename == str(tmp_path / "input.csv")
    # a FIFO or a folder is not replaced
    os.mkfifo(tmp_path / "pipe")
    for target, kind in [(tmp_path / "pipe", "a FIFO"), (tmp_path / "nowhere", None)]:
        if kind is None:
            target.mkdir()
            kind = "a directory"
        with pytest.raises(OSError, match=f"exists and is not a regular file \\({kind}\\)") as err:
            atomic_write(str(target), lambda f: f.write(b"x"))
        assert err.value.filename == str(target)
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)


def test_npz_members_read_as_numpy_reads_them(tmp_path, rng):
    arrays = {
        "c": rng.normal(size=(7, 3)),
        "f": np.asfortranarray(rng.normal(size=(4, 5))),
        "big": rng.normal(size=6).astype(">f8"),
        "i": np.arange(5, dtype=np.int32),
        "empty": np.zeros((0, 3)),
        "scalar": np.float32(2.5),
    }
    for save in (np.savez, np.savez_compressed):
        save(tmp_path / "a.npz", **arrays)
        with NpzArchive(str(tmp_path / "a.npz")) as npz:
            assert sorted(npz.names) == sorted(arrays)
            for name, want in arrays.items():
                member = npz.describe(name)
                got = npz.read(member)
                assert member.compressed == (save is np.savez_compressed)
                assert got.dtype == np.asarray(want).dtype and got.flags.c_contiguous and got.flags.writeable
                assert_array_equal(got, want)
    # version 2.0 headers (numpy writes them for very long headers)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arrays["c"], version=(2, 0))
    with zipfile.ZipFile(tmp_path / "v2.npz", "w") as z:
        z.writestr("x.npy", buf.getvalue())
    with NpzArchive(str(tmp_path / "v2.npz")) as npz:
        assert_array_equal(npz.read(npz.describe("x")), arrays["c"])


def test_npz_members_that_lie_are_refused(tmp_path):
    def archive(name, header_shape, payload, descr="<f8"):
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": header_shape})
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            z.writestr("x.npy", buf.getvalue() + payload)
        return str(tmp_path / name)

    with NpzArchive(archive("short.npz", (4,), bytes(16))) as npz:
        with pytest.raises(ValueError, match=r"declares shape \(4,\) of float64 \(32 bytes\) but holds 16"):
            npz.describe("x")
    with NpzArchive(archive("long.npz", (2,), bytes(64))) as npz:
        with pytest.raises(ValueError, match="but holds 64 bytes"):
            npz.describe("x")
    with NpzArchive(archive("obj.npz", (1,), bytes(8), "|O")) as npz:
        with pytest.raises(ValueError, match="holds dtype object, not numbers"):
            npz.describe("x")
    with NpzArchive(archive("ok.npz", (2,), bytes(16))) as npz:
        assert_array_equal(npz.read(npz.describe("x")), [0.0, 0.0])
    # a flipped data byte fails the zip CRC
    raw = bytearray((tmp_path / "ok.npz").read_bytes())
    raw[raw.find(bytes(16)) + 3] ^= 1
    (tmp_path / "flip.npz").write_bytes(bytes(raw))
    with NpzArchive(str(tmp_path / "flip.npz")) as npz, pytest.raises(zipfile.BadZipFile, match="CRC"):
        npz.read(npz.describe("x"))


@pytest.mark.parametrize("sizes", [[1], [3, 0, 5], [1000, 1, 24_576]])
def test_npy_vectors_written_block_by_block_are_np_save_byte_for_byte(tmp_path, sizes):
    """The header is rewritten in place once the length is known: the file is np.save's."""
    rng = np.random.default_rng(len(sizes))
    blocks = [rng.normal(size=k) for k in sizes]
    count = []
    atomic_write(str(tmp_path / "v.npy"), lambda f: count.append(write_npy_vector(f, iter(blocks))))
    np.save(tmp_path / "ref.npy", np.concatenate(blocks))
    assert count == [sum(sizes)]
    assert (tmp_path / "v.npy").read_bytes() == (tmp_path / "ref.npy").read_bytes()
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), np.concatenate(blocks))

"""Data files as row sources (nystrom_kme.datafiles): every format gives the rows and
columns numpy reads from the same file, streamed; bad files give one-line errors
that name the file."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import nystrom_kme as nk
from nystrom_kme.datafiles import DataFileError, read_data
from nystrom_kme.sources import ArrayLikeSource


@pytest.fixture
def X(rng):
    return rng.normal(size=(700, 4))


def _rows(src):
    return np.concatenate([b for _, b in src.chunks()])


def test_npy_is_memory_mapped_and_bit_identical(tmp_path, X):
    np.save(tmp_path / "x.npy", X)
    src = read_data(tmp_path / "x.npy")
    assert isinstance(src, ArrayLikeSource) and isinstance(src.array, np.memmap)
    assert_array_equal(_rows(src), X)
    a = nk.NystromKME(n_landmarks=30, random_state=0).fit(src)
    b = nk.NystromKME(n_landmarks=30, random_state=0).fit(X)
    assert_array_equal(a.weights_, b.weights_)
    # columns and 1-D files
    assert_array_equal(_rows(read_data(tmp_path / "x.npy", columns=[3, 1])), X[:, [3, 1]])
    np.save(tmp_path / "v.npy", X[:, 0])
    assert_array_equal(_rows(read_data(tmp_path / "v.npy")), X[:, :1])


def test_npz_member(tmp_path, X):
    np.savez(tmp_path / "d.npz", a=X, b=X[:10])
    assert_array_equal(_rows(read_data(tmp_path / "d.npz", key="b")), X[:10])
    with pytest.raises(DataFileError, match="2 members .*--key"):
        read_data(tmp_path / "d.npz")
    with pytest.raises(DataFileError, match="no member 'c'"):
        read_data(tmp_path / "d.npz", key="c")


@pytest.mark.parametrize("suffix, delimiter", [(".csv", ","), (".tsv", "\t"), (".txt", " ")])
def test_text_files_with_and_without_header(tmp_path, X, suffix, delimiter):
    plain = tmp_path / f"plain{suffix}"
    np.savetxt(plain, X, delimiter=delimiter, fmt="%.17g")
    assert_array_equal(_rows(read_data(plain)), X)
    named = tmp_path / f"named{suffix}"
    np.savetxt(named, X, delimiter=delimiter, fmt="%.17g", header=delimiter.join("abcd"), comments="")
    src = read_data(named, columns=["d", "b"])
    assert src.count_rows() == 700
    assert_array_equal(_rows(src), X[:, [3, 1]])
    assert_array_equal(_rows(read_data(named, columns=["2"])), X[:, [2]])
    with pytest.raises(DataFileError, match="no column 'e'; columns: a, b, c, d"):
        read_data(named, columns=["e"])
    with pytest.raises(DataFileError, match="has no column names"):
        read_data(plain, columns=["a"])
    assert read_data(plain).feature_names is None
    assert read_data(named).feature_names == ("a", "b", "c", "d")
    assert src.feature_names == ("d", "b")  # the selected columns, in their order


def test_a_numbered_header_over_decimals_is_a_header_with_a_warning(tmp_path, X):
    """pandas writes ``0,1,2,3`` for columns without names (DataFrame(X).to_csv(index=False)):
    taken as a header, with a warning saying so; not a data row (n would be 701), not
    silently eaten. Integer data under such a line stays data; header= decides."""
    path = tmp_path / "today.csv"
    np.savetxt(path, X, delimiter=",", fmt="%.17g", header="0,1,2,3", comments="")
    with pytest.warns(UserWarning, match=r"today.csv: line 1 \(0,1,2,3\) is read as a header, not as data") as rec:
        src = read_data(path)
    assert len(rec) == 1 and "header=False, or --no-header" in str(rec[0].message)
    assert src.count_rows() == 700 and src.feature_names is None  # column numbers are no names
    assert_array_equal(_rows(src), X)
    data = read_data(path, header=False)  # the line as data: no warning
    assert data.count_rows() == 701 and _rows(data)[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    counts = tmp_path / "counts.csv"
    counts.write_text("0,1,2\n4,0,7\n5,5,1\n")  # integers: the first line is a row like the others
    assert read_data(counts).count_rows() == 3
    not_numbered = tmp_path / "data.csv"
    not_numbered.write_text("0,2,1\n0.5,1.5,2.5\n")
    assert read_data(not_numbered).count_rows() == 2
    named = read_data(path, header=True)
    assert named.count_rows() == 700 and named.feature_names == ("0", "1", "2", "3")


def test_text_blocks_are_streamed(tmp_path, X, monkeypatch):
    monkeypatch.setattr("nystrom_kme.datafiles.TEXT_BLOCK_LINES", 64)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", fmt="%.17g")
    seen = []
    src = read_data(tmp_path / "x.csv", on_rows=seen.append)
    blocks = [b.shape[0] for _, b in src.chunks()]
    assert max(blocks) == 64 and sum(blocks) == 700 and seen == blocks
    kme = nk.NystromKME(n_landmarks=25, random_state=0)
    np.testing.assert_allclose(
        kme.fit(src).weights_, nk.NystromKME(n_landmarks=25, random_state=0).fit(X).weights_, rtol=1e-10
    )


def test_hdf5_and_zarr(tmp_path, X):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["group/data"] = X
    assert_array_equal(_rows(read_data(tmp_path / "x.h5", columns=[0, 2])), X[:, [0, 2]])
    with h5py.File(tmp_path / "two.h5", "w") as f:
        f["a"], f["b"] = X, X
    assert_array_equal(_rows(read_data(tmp_path / "two.h5", key="b")), X)
    with pytest.raises(DataFileError, match="2 datasets"):
        read_data(tmp_path / "two.h5")
    z = zarr.open(str(tmp_path / "x.zarr"), mode="w", shape=X.shape, chunks=(100, 4), dtype="f8")
    z[:] = X
    src = read_data(tmp_path / "x.zarr")
    assert_array_equal(_rows(src), X)
    assert_array_equal(src.take([5, 600, 5]), X[[5, 600, 5]])


def test_parquet(tmp_path, X):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "n": np.arange(700)}), tmp_path / "x.parquet")
    assert_array_equal(_rows(read_data(tmp_path / "x.parquet", columns=["b", "n"])), np.c_[X[:, 1], np.arange(700.0)])
    assert read_data(tmp_path / "x.parquet", columns=["n", "a"]).feature_names == ("n", "a")  # the schema's names
    pq.write_table(pa.table({"a": X[:, 0], "s": ["x"] * 700}), tmp_path / "s.parquet")
    with pytest.raises(DataFileError, match="s.parquet: non-numeric column"):
        _rows(read_data(tmp_path / "s.parquet"))


def test_missing_optional_readers_are_named(tmp_path, monkeypatch):
    for name in ("x.parquet", "x.h5"):
        (tmp_path / name).write_bytes(b"\0")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(DataFileError, match=r"x.parquet: reading .parquet files needs pyarrow.*\[parquet\]"):
        read_data(tmp_path / "x.parquet")
    with pytest.raises(DataFileError, match=r"x.h5: reading this file needs h5py.*\[hdf5\]"):
        read_data(tmp_path / "x.h5")


def test_bad_files_name_the_file(tmp_path):
    cases = {
        "missing.npy": (None, "no such file"),
        "data.xlsx": (b"x", "unknown data file type '.xlsx'"),
        "text.npy": (b"hello", "not a .npy file"),
        "text.npz": (b"hello", "not a .npz file"),
        "ragged.csv": (b"1,2\n3\n", "ragged.csv: line 2 has 1 field but line 1 has 2 fields"),
        "words.csv": (b"a,b\n1,x\n", "words.csv: line 2, column index 1: 'x' is not a number"),
        "nan.csv": (b"1,2\n3,nan\n", "nan.csv: line 2, column index 1: NaN or inf in the data"),
        "binary.csv": (b"1,2\n" + bytes(range(128, 256)) + b"\n", "binary.csv: not UTF-8 text"),
        "empty.csv": (b"# only a comment\n", "no rows"),
    }
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    np.save(tmp_path / "strings.npy", np.array([["a"]]))
    for name, (content, message) in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        with pytest.raises(DataFileError, match=message) as err:
            _rows(read_data(tmp_path / name))
        assert name in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DataFileError, match="cube.npy: expected a 1-D or 2-D array"):
        read_data(tmp_path / "cube.npy")
    with pytest.raises(DataFileError, match="strings.npy: expected numbers"):
        read_data(tmp_path / "strings.npy")
    np.save(tmp_path / "nan.npy", np.array([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="nan.npy contains NaN"):
        nk.NystromKME(n_landmarks=1).fit(read_data(tmp_path / "nan.npy"))


@pytest.mark.parametrize(
    "text, message",
    [
        # the file: the second row has three fields; it used to be read as 4 rows
        ("1,2\n3,4,5\n6,7\n8,9\n", "line 2 has 3 fields but line 1 has 2 fields"),
        ("1,2\n3\n", "line 2 has 1 field but line 1 has 2 fields"),
        ("1,2\n3,4,\n", "line 2 has 3 fields but line 1 has 2 fields"),  # a trailing delimiter
        # line numbers are the file's: header, comments and blank lines count
        ("a,b\n# note\n\n1,2\n3,4 # fine\n5,6,7\n", "line 6 has 3 fields but the header \\(line 1\\) has 2"),
        ("# c\n\n1 ,2\n3,4\n\n5,,6\n", "line 6 has 3 fields but line 3 has 2 fields"),
        ("a,b\n1,2\n\n3,x\n", "line 4, column index 1: 'x' is not a number"),
        ("a,b\n1,2\n\n# c\n3,inf\n", "line 5, column index 1: NaN or inf in the data"),
    ],
)
def test_every_row_has_the_fields_of_the_first_and_errors_name_the_line(tmp_path, text, message):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(DataFileError, match=f"r.csv: {message}"):
        _rows(read_data(tmp_path / "r.csv"))
    # a selection of columns does not hide a short or long row
    if "fields" in message:
        with pytest.raises(DataFileError, match=message.split(" but")[0]):
            _rows(read_data(tmp_path / "r.csv", columns=[0]))


def test_bad_lines_are_named_in_later_blocks(tmp_path, monkeypatch, rng):
    monkeypatch.setattr("nystrom_kme.datafiles.TEXT_BLOCK_LINES", 100)
    X = rng.normal(size=(1000, 3))
    lines = ["x,y,z"] + [",".join(map(repr, row)) for row in X.tolist()]
    lines[400:400] = ["# a comment", ""]  # file lines 401 and 402
    good = tmp_path / "good.csv"
    good.write_text("\n".join(lines) + "\n")
    assert_array_equal(_rows(read_data(good)), X)
    for line, value, message in [
        (777, "1,2", "line 777 has 2 fields but the header \\(line 1\\) has 3"),
        (778, "1,2,nan", "line 778, column index 2: NaN or inf in the data"),
        (913, "1,b,3", "line 913, column index 1: 'b' is not a number"),
    ]:
        bad = lines.copy()
        bad[line - 1] = value
        (tmp_path / "bad.csv").write_text("\n".join(bad) + "\n")
        with pytest.raises(DataFileError, match=f"bad.csv: {message}"):
            _rows(read_data(tmp_path / "bad.csv"))


def test_a_wrong_column_name_gets_a_suggestion(tmp_path):
    (tmp_path / "n.csv").write_text("height,weight,age\n1,2,3\n")
    for wrong, hint in [("Weight", "'weight'"), ("heigth", "'height'"), ("ag", "'age'")]:
        with pytest.raises(
            DataFileError, match=f"no column '{wrong}' \\(did you mean {hint}\\?\\); columns: height, weight, age"
        ):
            read_data(tmp_path / "n.csv", columns=[wrong])
    with pytest.raises(DataFileError, match="no column 'zzz'; columns"):
        read_data(tmp_path / "n.csv", columns=["zzz"])
    with pytest.raises(DataFileError, match="column index 3 out of range: the file has 3 columns, indices 0 to 2"):
        read_data(tmp_path / "n.csv", columns=[3])


def test_non_regular_files_are_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "dir.npy").mkdir()
    code = (
        "import sys\nfrom nystrom_kme.datafiles import read_data, DataFileError\n"
        "for p in sys.argv[1:]:\n    try:\n        read_data(p)\n"
        "    except DataFileError as err:\n        print(err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "pipe.csv", "dir.npy"],
        cwd=tmp_path,
        timeout=120,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
    )
    assert out.stdout.splitlines() == [
        "pipe.csv: not a regular file (a FIFO)",
        "dir.npy: not a regular file (a directory)",
    ], out.stderr


def test_an_npz_member_is_checked_against_its_size_before_it_is_read(tmp_path, X):
    """A member whose .npy header declares (3, 4) but whose zip entry holds 100 MB of
    deflated zeros (~100 KB on disk) is refused before decompression."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (3, 4)})
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            for _ in range(100):
                f.write(bytes(1 << 20))
    assert (tmp_path / "bomb.npz").stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(DataFileError, match=r"bomb.npz: .*declares shape \(3, 4\) .* but holds"):
            read_data(tmp_path / "bomb.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    # compressed data files are fine when sizes agree; big-endian members come back native
    np.savez_compressed(tmp_path / "c.npz", x=X.astype(">f8"))
    src = read_data(tmp_path / "c.npz")
    assert src.dtype == np.float64 and src.dtype.isnative
    assert_array_equal(_rows(src), X)


def test_every_suffix_has_exactly_one_reader():
    """The format table is complete: each suffix of SUFFIXES is read by one path (an array
    opener, the text reader or Parquet), and no reader serves an unlisted suffix."""
    from nystrom_kme import datafiles

    paths = [set(datafiles.ARRAY_READERS), set(datafiles.TEXT_SUFFIXES), {".parquet"}]
    assert sum(len(p) for p in paths) == len(set().union(*paths)) == len(datafiles.SUFFIXES)
    assert set().union(*paths) == set(datafiles.SUFFIXES)


def test_a_csv_with_another_separator_suggests_the_delimiter(tmp_path):
    from nystrom_kme.datafiles import DataFileError, read_data

    path = tmp_path / "semi.csv"
    path.write_text("a;b;c\n1;2;3\n4;5;6\n")
    with pytest.raises(DataFileError, match="try --delimiter ';'"):
        read_data(path).count_rows()
    assert read_data(path, delimiter=";").count_rows() == 2


# header names with the delimiter, quotes, "#" and unicode (issue 43, item 6): written by
# the csv module (pandas' to_csv quotes alike) or shlex for whitespace, read back unchanged
ODD_NAMES = ["income, net", 'say "hi"', "age#2", "größe", "温度", "tab\there", "a;b", "plain"]


@pytest.mark.parametrize("suffix, delimiter", [(".csv", ","), (".tsv", "\t"), (".csv", ";"), (".txt", None)])
def test_header_names_are_read_as_csv_and_shlex_write_them(tmp_path, rng, suffix, delimiter):
    import csv
    import shlex

    X = rng.normal(size=(50, len(ODD_NAMES)))
    path = tmp_path / f"odd{suffix}"
    with open(path, "w", newline="", encoding="utf-8") as f:
        if delimiter is None:
            f.write(shlex.join(ODD_NAMES) + "\n")
        else:
            csv.writer(f, delimiter=delimiter, lineterminator="\n").writerow(ODD_NAMES)
        for row in X.tolist():
            f.write((delimiter or " ").join(repr(v) for v in row) + "\n")
    src = read_data(path, delimiter=delimiter if suffix == ".csv" else None)
    assert src.feature_names == tuple(ODD_NAMES)
    assert_array_equal(_rows(src), X)
    chosen = read_data(path, columns=["温度", "income, net", 'say "hi"'], delimiter=";" if delimiter == ";" else None)
    assert chosen.feature_names == ("温度", "income, net", 'say "hi"')
    assert_array_equal(_rows(chosen), X[:, [4, 0, 1]])


def test_hash_is_a_comment_only_at_the_start_of_a_line_and_after_the_numbers(tmp_path):
    """'#' inside a header name is a character of the name; a line that begins with '#'
    (blanks before it allowed) is a comment, before the header and among the data; a
    data line may end with one (no number holds a '#'), as numpy's loadtxt reads it."""
    text = (
        '# written by hand\n   # indented comment\nid#,"x # y",z#\n1,2,3  # trailing note\n  # between rows\n\n4,5,6#\n'
    )
    (tmp_path / "h.csv").write_text(text)
    src = read_data(tmp_path / "h.csv")
    assert src.feature_names == ("id#", "x # y", "z#")
    assert _rows(src).tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert read_data(tmp_path / "h.csv", columns=["z#"]).feature_names == ("z#",)
    # header=True reads the names as csv does too
    (tmp_path / "n.csv").write_text('"1,5",2\n3,4\n')
    assert read_data(tmp_path / "n.csv", header=True).feature_names == ("1,5", "2")
    # a line of numbers with a comment is data, not a header
    (tmp_path / "d.csv").write_text("1,2 # first row\n3,4\n")
    data = read_data(tmp_path / "d.csv")
    assert data.feature_names is None and _rows(data).tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_header_with_an_unclosed_quote_is_named(tmp_path):
    (tmp_path / "q.csv").write_text('\n# c\na,"b\n1,2\n')
    with pytest.raises(DataFileError, match=r"q.csv: line 3: cannot read the column names: a quote is not closed"):
        read_data(tmp_path / "q.csv")
    (tmp_path / "q.txt").write_text("a 'b\n1 2\n")
    with pytest.raises(DataFileError, match=r"q.txt: line 1: cannot read the column names: a quote is not closed"):
        read_data(tmp_path / "q.txt")


def test_drift_watch_reads_a_quoted_header_on_stdin(tmp_path, rng):
    """Standard input's header is read as a file's: the detector fitted on a file whose
    names hold ',' and '#' accepts the same header on stdin, and names a wrong one whole."""
    import csv

    names = ["income, net", "age#2", "größe"]
    for name, n in [("ref.csv", 600), ("stream.csv", 60)]:
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerow(names)
            f.writelines(",".join(map(repr, row)) + "\n" for row in rng.normal(size=(n, 3)).tolist())
    det = nk.OnlineDriftDetector(read_data(tmp_path / "ref.csv"), ert=100, window_size=20, random_state=0)
    assert list(det.feature_names_in_) == names
    det.save(tmp_path / "online.npz")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

    def watch(stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nystrom_kme", "drift", "watch", "online.npz"],
            cwd=tmp_path,
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    stream = (tmp_path / "stream.csv").read_text(encoding="utf-8")
    same = watch(stream)
    assert same.returncode in (0, 1) and same.stderr == "", same.stderr  # 1: an alarm, by chance
    wrong = watch('"income, net",age,größe\n' + stream.split("\n", 1)[1])
    assert wrong.returncode == 2 and "stdin has columns ['income, net', 'age', 'größe']" in wrong.stderr, wrong.stderr

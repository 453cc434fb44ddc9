"""The CSV text of a result: the solver core's '%.17g' (bdf_rows_text) writes, value for value,
what Python's correctly rounded '%.17g' % value writes, so a table reads back bit for bit; and
without the core, the Python formatting writes the same file."""
import ctypes
import math
import os
from pathlib import Path

import numpy as np
import pytest

from bondsim_ros.bondgraph.simulation import SimulationResult, _rows_text
from bondsim_ros.solver import _ccore, native


def python_text(values) -> str:
    """The oracle: Python's own '%.17g' (its dtoa, correctly rounded, ties to even)."""
    return "".join(",".join("%.17g" % v for v in row) + "\n" for row in np.atleast_2d(values).tolist())


def core_text(lib, values) -> str:
    return _ccore.rows_text(lib, np.atleast_2d(np.asarray(values, dtype=float)))


def first_difference(lib, values):
    """(value, core's text, Python's text) of the first value the two write differently, else None."""
    values = np.asarray(values, dtype=float).ravel()
    ours = core_text(lib, values).rstrip("\n").split(",")
    for v, a in zip(values.tolist(), ours):
        if a != "%.17g" % v:
            return repr(v), a, "%.17g" % v
    return None


def neighbours(x, k=3):
    """x and the k floats on each side of it."""
    out, up, down = [x], x, x
    for _ in range(k):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        out += [float(up), float(down)]
    return out


def special_values() -> list:
    """Where a '%.17g' is easy to get wrong: powers of ten and two and their neighbours (the
    decimal exponent and the carry into the next decade), the ends of the exact range (1e-39,
    1e17), decade tops that round up to the next power of ten (9.99...95), integers past 2^53,
    exact ties rounded to even (x = n + 1/4 near 1e15 has 18 digits ending in 5), subnormals,
    the extremes, zeros of both signs, infinities and NaN."""
    vals = []
    for k in range(-325, 309):
        vals += neighbours(float(f"1e{k}"))
    for k in range(-1074, 1024, 7):
        vals += neighbours(2.0 ** k, 1)
    for k in range(-45, 20):
        vals += neighbours(float(f"9.99999999999999995e{k}"), 2)
    vals += [float(2 ** 53 + 2 * j) for j in range(50)] + [1e15 + j + 0.25 for j in range(0, 4000, 3)]
    vals += [1e15 + j + 0.75 for j in range(0, 4000, 3)] + [2.0 ** 51 - 0.25 - j for j in range(200)]
    vals += [1e14 + j / 8 for j in range(2000)] + list(range(-2000, 2000))
    vals += [5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308, 0.1, 0.2, 0.3,
             1 / 3, 2 / 3, 1e-5, 123456.789, 0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan]
    return vals + [-v for v in vals]


def random_values(seed: int, n: int) -> np.ndarray:
    """Random float64 bit patterns (every exponent alike) and log-uniform values over the exact
    range and a decade beyond each end, both signs."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 64, size=n, dtype=np.uint64).view(np.float64)  # the sign bit among them
    spread = np.exp(rng.uniform(math.log(1e-41), math.log(1e19), n)) * rng.choice([-1.0, 1.0], n)
    return np.concatenate([bits, spread])


@pytest.fixture(scope="module")
def core():
    return _ccore.library()


def test_the_cores_digits_are_pythons_for_the_values_that_are_hard_to_write(core):
    assert first_difference(core, special_values()) is None


def test_the_cores_digits_are_pythons_for_random_values(core):
    assert first_difference(core, random_values(2026, 200_000)) is None


def test_the_text_of_a_table_reads_back_bit_for_bit(core):
    rows = random_values(7, 1500).reshape(-1, 12)
    text = core_text(core, rows)
    assert text == python_text(rows)
    back = np.array([[float(v) for v in line.split(",")] for line in text.splitlines()])
    finite = np.isfinite(rows)
    assert np.array_equal(back[finite].view(np.int64), rows[finite].view(np.int64))
    assert np.array_equal(np.isnan(back), np.isnan(rows))


def test_a_table_of_no_rows_is_no_text_and_rows_of_no_columns_are_empty_lines(core):
    assert core_text(core, np.zeros((0, 5))) == python_text(np.zeros((0, 5))) == ""
    assert _ccore.rows_text(core, np.zeros((3, 0))) == "\n\n\n"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_ccore, "loaded", lambda: None)
        assert _rows_text(np.zeros((3, 0))) == "\n\n\n"


def test_a_result_writes_the_same_csv_with_and_without_the_core(tmp_path, monkeypatch, core):
    """``SimulationResult.to_csv`` formats by the core where the process has it loaded, else in
    Python: the file is the same, and it reads back as the result's values bit for bit."""
    data = np.column_stack([np.linspace(0.0, 1.0, 700), random_values(3, 700).reshape(700, 2)])
    result = SimulationResult(names=["t", "a", "b"], data=data)
    result.to_csv(tmp_path / "core.csv")
    assert _ccore.loaded() is core
    monkeypatch.setattr(_ccore, "loaded", lambda: None)
    result.to_csv(tmp_path / "python.csv")
    assert (tmp_path / "core.csv").read_bytes() == (tmp_path / "python.csv").read_bytes()
    lines = (tmp_path / "core.csv").read_text().splitlines()
    assert lines[0] == "t,a,b"
    back = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    finite = np.isfinite(data)
    assert np.array_equal(back[finite].view(np.int64), data[finite].view(np.int64))
    assert _rows_text(data[:3]) == python_text(data[:3])


def test_a_core_built_without_128_bit_integers_writes_every_value_by_the_c_library(tmp_path):
    """Where the compiler has no 128-bit integers (32-bit targets) the core still builds, and
    every value goes through snprintf: the same text."""
    path = native.build_library(_ccore.source(), "bdf_core_no_int128", tmp_path, extra_flags=("-U__SIZEOF_INT128__",))
    lib = ctypes.CDLL(str(path))
    lib.bdf_rows_text.argtypes, lib.bdf_rows_text.restype = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                                             ctypes.c_void_p], ctypes.c_int64
    values = np.concatenate([special_values(), random_values(11, 20_000)])
    assert first_difference(lib, values) is None


LOCALE_CHECK = """
import locale, sys
import numpy as np
from bondsim_ros.solver import _ccore
locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8")
values = np.array([[1.5e-300, 1.25e20, -2.5e-320, 0.5, 1.7976931348623157e308]])
text = _ccore.rows_text(_ccore.library(), values)
expected = ",".join("%.17g" % v for v in values[0]) + "\\n"
print(repr(text), repr(expected), locale.localeconv()["decimal_point"])
sys.exit(0 if text == expected and locale.localeconv()["decimal_point"] == "," else 1)
"""


def test_the_text_is_the_same_in_a_process_whose_numbers_are_german(tmp_path):
    """A process that set a locale with a decimal comma (a GUI toolkit does) still gets the
    C locale's '%.17g' for the values snprintf writes, and keeps its own locale."""
    import shutil
    import subprocess
    import sys

    localedef = shutil.which("localedef")
    if localedef is None or not Path("/usr/share/i18n/locales/de_DE").exists():
        pytest.skip("no localedef or no de_DE locale source to make a locale with a decimal comma")
    made = subprocess.run([localedef, "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "de_DE.UTF-8")],
                          capture_output=True, text=True)
    if not (tmp_path / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef made no locale: {made.stderr.strip()}")
    env = dict(os.environ, LOCPATH=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", LOCALE_CHECK], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

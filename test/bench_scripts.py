"""The scripts of benchmarks/ loaded as modules by the tests that check them (they are not a
package): each with benchmarks/ on sys.path while it loads, as when it runs (they import
record.py beside them)."""
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str):
    """benchmarks/<name>.py as a fresh module."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))

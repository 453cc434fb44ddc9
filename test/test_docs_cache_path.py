"""docs/engine.md states where generated model code goes; that is where it goes, for each of
the three settings it names."""
import re
from pathlib import Path

from bondsim_ros.bondgraph.codegen import cache_dir

ENGINE_MD = Path(__file__).resolve().parents[1] / "docs" / "engine.md"


def test_engine_md_names_the_model_cache_folder(tmp_path, monkeypatch):
    text = " ".join(ENGINE_MD.read_text().split())
    stated = re.search(r"\*\*Cache\.\*\* Generated code is stored in `([^`]+)`, else `([^`]+)`, else `([^`]+)`", text)
    assert stated, "docs/engine.md: the Cache step no longer states the folder"
    env_dir, xdg_dir, home_dir = stated.groups()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BONDSIM_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == Path(home_dir.replace("~", str(tmp_path / "home")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == Path(xdg_dir.replace("$XDG_CACHE_HOME", str(tmp_path / "xdg")))
    monkeypatch.setenv("BONDSIM_CACHE_DIR", str(tmp_path / "own"))
    assert cache_dir() == Path(env_dir.replace("$BONDSIM_CACHE_DIR", str(tmp_path / "own")))

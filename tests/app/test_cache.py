"""The batch/compare cache: key material, location, code hash."""
from __future__ import annotations

import pytest

from nsys_diag.app import cache


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def test_cache_key_depends_on_content_version_and_thresholds():
    from nsys_diag.model.thresholds import Thresholds

    th = Thresholds()
    k = cache.cache_key("abc", th)
    assert k == cache.cache_key("abc", Thresholds())
    assert k != cache.cache_key("abd", th)
    assert k != cache.cache_key("abc", th.with_overrides(min_gap_ns=2_000))


def test_cache_dir_respects_xdg(tmp_path):
    assert cache.cache_dir() == tmp_path / "xdg-cache" / "nsys-diag" / "batch"


def test_a_changed_code_hash_changes_the_key():
    from nsys_diag.model.thresholds import Thresholds

    th = Thresholds()
    assert cache.cache_key("abc", th) == cache.cache_key("abc", th, code=cache.code_hash())
    assert cache.cache_key("abc", th, code="0" * 64) != cache.cache_key("abc", th, code="1" * 64)
    assert cache.cache_key("abc", th, code="0" * 64) != cache.cache_key("abc", th)


def test_code_hash_covers_the_package_code_and_templates(tmp_path, monkeypatch):
    names = [name for name, _ in cache._code_files()]
    assert "nsys_diag/app/cache.py" in names and "nsys_diag/cli.py" in names
    assert "templates/base.html" in names
    assert not any("__pycache__" in n for n in names)
    # an edit of one file (here: a copy of the package with one changed byte) changes the hash
    pkg = tmp_path / "nsys_diag"
    (pkg / "app").mkdir(parents=True)
    (pkg / "app" / "x.py").write_text("A = 1\n")
    monkeypatch.setattr(cache, "PACKAGE_DIR", pkg)
    cache.code_hash.cache_clear()
    try:
        first = cache.code_hash()
        (pkg / "app" / "x.py").write_text("A = 2\n")
        cache.code_hash.cache_clear()
        assert cache.code_hash() != first
    finally:
        cache.code_hash.cache_clear()


def test_cache_round_trip_and_misses(tmp_path):
    c = cache.Cache(tmp_path / "c")
    key = "ab" + "0" * 62
    assert c.get(key) is None
    c.put(key, {"summary": {"x": float("nan")}, "view": {"v": 1}})
    entry = c.get(key)
    assert entry["summary"] == {"x": None} and entry["view"] == {"v": 1}
    assert cache.Cache(None).get(key) is None  # --no-cache
    (tmp_path / "c" / "ab" / f"{key}.json.gz").write_bytes(b"not gzip")
    assert c.get(key) is None

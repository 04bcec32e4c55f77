import json

import pytest

from otod import results
from otod.core.errors import OtodError


def test_save_load_roundtrip_and_plain_json(tmp_path):
    path = results.save(tmp_path / "a" / "r.json", {"kind": "sweep", "x": float("nan")}, [{"v": 1, "g": 2.5}])
    loaded = results.load(path)
    assert loaded.records == [{"v": 1, "g": 2.5}] and loaded.meta["x"] is None
    assert json.loads(path.read_text())["records"][0]["g"] == 2.5  # readable without otod
    assert not list(path.parent.glob(".*tmp"))


@pytest.mark.parametrize("content,fragment", [(None, "no such file"), ("{not json", "not readable"),
                                              ('{"format": "other"}', "not an otod results file"),
                                              ("\x00\xff", "not readable")])
def test_bad_files_raise_one_clear_error(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    with pytest.raises(OtodError, match=fragment):
        results.load(path)


def test_environment_records_versions_and_device():
    env = results.environment()
    assert {"otod", "jax", "numpy", "optax", "backend", "device"} <= set(env)

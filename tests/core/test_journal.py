"""The journal and lock of a running sweep (`otod.core.journal`): chunks appended and read back, a cut last line
dropped, damage and foreign journals refused by name, part files told from anything else, one writer per file.
Resuming and merging through whole sweeps is tested in test_sweep.py, test_distributed.py and test_share.py."""

import json

import pytest

from otod.core import journal, results
from otod.core.errors import OtodError


def _journal(tmp_path, chunks=2, digest="0123456789"):
    path = tmp_path / "r.parquet"
    jpath = journal.journal_path(path)
    journal.start_journal(jpath, {"digest": digest, "config": {"sweep": "condition"}})
    entries = [journal.append_chunk(jpath, f"c{i}", [{"v": i, "g": 0.5 * i}]) for i in range(chunks)]
    return path, jpath, entries


def test_appended_chunks_read_back_with_their_checksums(tmp_path):
    path, jpath, entries = _journal(tmp_path)
    assert jpath.name == "r.parquet.partial" and journal.journals(path) == [jpath]
    header, chunks = journal.read_journal(jpath, "0123456789")
    assert header["format"] == journal.JOURNAL_FORMAT and header["config"] == {"sweep": "condition"}
    assert [c["key"] for c in chunks] == ["c0", "c1"] and chunks[1]["records"] == [{"v": 1, "g": 0.5}]
    assert entries[1] == {"key": "c1", "lanes": 1, "sha256": results.records_checksum([{"v": 1, "g": 0.5}])}
    assert journal.read_journal(tmp_path / "none.partial", None) == (None, [])


def test_a_last_line_cut_by_a_kill_is_dropped_and_repaired_by_its_writer_only(tmp_path):
    _, jpath, _ = _journal(tmp_path)
    whole = jpath.read_bytes()
    jpath.write_bytes(whole[:-10])
    assert len(journal.read_journal(jpath, None, repair=False)[1]) == 1 and jpath.read_bytes() == whole[:-10]
    assert len(journal.read_journal(jpath, None)[1]) == 1
    assert jpath.read_bytes() == whole[:whole.rfind(b"\n", 0, len(whole) - 1) + 1]


def test_damage_a_foreign_config_and_an_edited_chunk_are_refused_by_name(tmp_path):
    _, jpath, _ = _journal(tmp_path)
    with pytest.raises(OtodError, match="belongs to another sweep config"):
        journal.read_journal(jpath, "9876543210")
    lines = jpath.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["records"][0]["g"] = 9.0
    jpath.write_text("\n".join([lines[0], json.dumps(edited), lines[2]]) + "\n")
    with pytest.raises(OtodError, match=r"chunk c0 \(line 2\) does not match its checksum"):
        journal.read_journal(jpath, None)
    jpath.write_text("\n".join([lines[0], "{damaged", lines[2]]) + "\n")
    with pytest.raises(OtodError, match="line 2 is damaged"):
        journal.read_journal(jpath, None)


def test_part_files_are_journals_and_anything_else_is_named(tmp_path):
    path = tmp_path / "r.parquet"
    part = journal.part_path(path, 1, 2)
    assert part.name == "r.parquet.part-1-of-2"
    journal.start_journal(part, {"digest": "0123456789", "config": {"sweep": "condition"}})
    journal.append_chunk(part, "c0", [{"v": 0}])
    assert journal.journals(path) == [part] and len(journal.read_part(part)[1]) == 1
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "other.json").write_text('{"a": 1}')
    (tmp_path / "binary").write_bytes(b"\x00\x01\xff")
    saved = results.save(tmp_path / "done.json", {"kind": "sweep", "sweep": "condition"}, [{"v": 1}])
    assert journal.not_a_part(part) is None
    assert journal.not_a_part(tmp_path / "missing") == "no such file"
    assert journal.not_a_part(tmp_path).startswith("a folder")
    assert journal.not_a_part(tmp_path / "empty").startswith("an empty file")
    assert journal.not_a_part(tmp_path / "other.json").startswith("a JSON file that is not an otod journal")
    assert journal.not_a_part(tmp_path / "binary").startswith("a binary file")
    assert journal.not_a_part(saved).startswith("a finished results file (condition sweep, 1 records)")
    with pytest.raises(OtodError, match="part file .*other.json: a JSON file"):
        journal.read_part(tmp_path / "other.json")


def test_a_second_writer_is_refused_and_the_lock_file_removed(tmp_path):
    path = tmp_path / "sub" / "r.parquet"
    with journal.lock(path) as lpath:
        assert lpath.name == "r.parquet.lock" and lpath.read_text().startswith("pid ")
        with pytest.raises(OtodError, match="another otod run is writing it"):
            with journal.lock(path):
                pass
    assert not lpath.exists()

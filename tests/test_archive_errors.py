"""Bad archives give one clear ArchiveError line, and nothing in them runs."""
import base64
import json
import os
import zlib

import pytest

import gwatch_nb
from gwatch_nb import ArchiveError
from conftest import FIXTURES

GOOD = os.path.join(FIXTURES, "attention_causal_h200.json")


def _document():
    with open(GOOD) as f:
        return json.load(f)


def _write(tmp_path, payload) -> str:
    path = tmp_path / "bad.json"
    path.write_bytes(payload if isinstance(payload, bytes) else json.dumps(payload).encode())
    return str(path)


def _raises(path, fragment, **options):
    with pytest.raises(ArchiveError) as caught:
        gwatch_nb.load(path, **options)
    message = str(caught.value)
    assert "\n" not in message and fragment in message, message
    return message


def test_truncated_file(tmp_path):
    _raises(_write(tmp_path, open(GOOD, "rb").read()[:5000]), "invalid JSON")


def test_not_json_at_all(tmp_path):
    _raises(_write(tmp_path, b"\x89PNG\r\n\x1a\n binary"), "invalid JSON")


def test_json_of_another_kind(tmp_path):
    _raises(_write(tmp_path, {"traceEvents": []}), "not a gwatch-nb report or trace archive")
    _raises(_write(tmp_path, [1, 2, 3]), "not a gwatch-nb report or trace archive")


def test_newer_version_asks_to_upgrade(tmp_path):
    document = _document()
    document["version"] = 99
    _raises(_write(tmp_path, document), "archive version 99 is newer")


def test_missing_file(tmp_path):
    _raises(str(tmp_path / "nowhere.json"), "cannot read")


def test_ipython_shows_one_line_not_the_traceback(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    shell = InteractiveShell.instance()
    shell.user_ns.update(gwatch_nb=gwatch_nb, path=str(tmp_path / "missing.json"))
    with capture_output() as captured:
        result = shell.run_cell("gwatch_nb.load(path)", store_history=False)
    assert isinstance(result.error_in_exec, ArchiveError)
    shown = captured.stdout + captured.stderr
    assert shown.strip() == f"ArchiveError: {result.error_in_exec}", shown
    assert "missing.json: cannot read" in shown


def test_corrupt_column(tmp_path):
    document = _document()
    column = document["launches"][0]["events"]["tag"]
    column["data"] = column["data"][:-12] + "!!!!" + column["data"][-8:]
    _raises(_write(tmp_path, document), "events.tag: corrupt column data")


def test_column_shorter_than_it_claims(tmp_path):
    document = _document()
    document["launches"][0]["events"]["tag"]["length"] += 5
    _raises(_write(tmp_path, document), "expected")


def test_counts_that_disagree_with_the_events(tmp_path):
    document = _document()
    launch = document["launches"][0]
    launch["events"]["tag"] = {"dtype": "<u4", "length": 2, "encoding": "zlib+base64",
                               "data": base64.b64encode(zlib.compress(b"\0" * 8)).decode()}
    _raises(_write(tmp_path, document), "do not match")


def test_a_compressed_bomb_is_refused_without_inflating(tmp_path):
    document = _document()
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    document["launches"][0]["events"]["tag"] = {"dtype": "<u4", "length": 4, "encoding": "zlib+base64",
                                                "data": bomb}
    _raises(_write(tmp_path, document), "expected 16")


@pytest.mark.parametrize("field, value, fragment", [
    ("dtype", "object", "unsupported dtype"),
    ("dtype", "|O", "unsupported dtype"),
    ("encoding", "pickle", "unsupported encoding"),
    ("length", -1, "bad length"),
    ("length", "12", "bad length"),
])
def test_hostile_column_descriptions(tmp_path, field, value, fragment):
    document = _document()
    document["launches"][0]["warps"]["sm"][field] = value
    _raises(_write(tmp_path, document), fragment)


def test_wrong_types_in_the_launch(tmp_path):
    document = _document()
    document["launches"][0]["grid"] = "32x8"
    _raises(_write(tmp_path, document), "grid: expected three non-negative integers")


def test_deeply_nested_json(tmp_path):
    _raises(_write(tmp_path, b"[" * 200000 + b"]" * 200000), "invalid JSON")


def test_size_limit(tmp_path):
    _raises(GOOD, "archive limit", max_bytes=1000)


def test_scope_names_are_kept_as_data(tmp_path):
    trace = gwatch_nb.load(GOOD)
    trace.scope_names[100] = "<img src=x onerror=alert(1)>"
    trace.save(tmp_path / "names.json")
    again = gwatch_nb.load(tmp_path / "names.json")
    assert "<img src=x onerror=alert(1)>" in set(again.df.scope.cat.categories)

"""The decode cache on disk (gwatch_nb/sass/decode_cache.py): a decode made once is read back
equal to nvdisasm's in a later process, under GWATCH_CACHE_DIR; a file that is truncated,
altered, or holds another cubin's words is not trusted but decoded again and written over."""
import hashlib
import json

import pytest

import sass_cubins
from gwatch_nb.sass import decode_cache, rewrite
from gwatch_nb.sass.disasm import disassemble

NAME = "nested_loops"


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A cache root of the test's own and an empty in-process cache: each decoded() is a new process's first."""
    monkeypatch.setenv("GWATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(rewrite, "_decoded", type(rewrite._decoded)())

    def first_decode(cubin: bytes) -> dict:
        rewrite._decoded.clear()
        return rewrite.decoded(cubin)
    return first_decode


def _key(cubin: bytes) -> str:
    return hashlib.sha256(cubin).hexdigest()


def _rewrite_file(cubin: bytes, change) -> None:
    """The cubin's cache file with its JSON changed by `change` and its digest made to match."""
    path = decode_cache.path(_key(cubin))
    with open(path, "rb") as f:
        payload = json.loads(f.read().partition(b"\n")[2])
    change(payload)
    body = json.dumps(payload).encode()
    with open(path, "wb") as f:
        f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def test_a_decode_is_kept_under_the_cache_root_and_read_back_equal(fresh, tmp_path):
    cubin = sass_cubins.cubins()[NAME]
    expected = disassemble(cubin)
    assert fresh(cubin) == expected
    path = decode_cache.path(_key(cubin))
    assert path.startswith(str(tmp_path)) and path.endswith(".json")
    assert decode_cache.load(cubin, _key(cubin)) == expected


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "other words", "bad target", "another decoder"])
def test_a_damaged_file_is_not_trusted_but_decoded_again_and_rewritten(fresh, damage, monkeypatch):
    cubin = sass_cubins.cubins()[NAME]
    expected = fresh(cubin)
    path = decode_cache.path(_key(cubin))
    with open(path, "rb") as f:
        good = f.read()
    if damage == "truncated":
        with open(path, "wb") as f:
            f.write(good[:len(good) // 2])
    elif damage == "flipped byte":
        with open(path, "wb") as f:
            f.write(good[:-10] + bytes([good[-10] ^ 1]) + good[-9:])
    elif damage == "other words":  # a well-formed file whose words are not this cubin's
        other = sass_cubins.cubins()["early_return"]
        words = disassemble(other)["early_return"]
        _rewrite_file(cubin, lambda p: p["kernels"][NAME].update(
            words=b"".join(i.raw for i in words).hex(),
            instructions=[[i.predicate, i.opcode, list(i.operands), i.target] for i in words]))
    elif damage == "bad target":
        def aim_outside(payload):
            rows = payload["kernels"][NAME]["instructions"]
            next(row for row in rows if row[3] is not None)[3] = len(rows)
        _rewrite_file(cubin, aim_outside)
    else:
        _rewrite_file(cubin, lambda p: p.update(decoder="0" * 64))
    assert decode_cache.load(cubin, _key(cubin)) is None
    runs = []
    real = rewrite.disassemble
    monkeypatch.setattr(rewrite, "disassemble", lambda data: runs.append(1) or real(data))
    assert fresh(cubin) == expected and runs == [1]  # decoded again ...
    assert decode_cache.load(cubin, _key(cubin)) == expected  # ... and written over with a good file
    assert fresh(cubin) == expected and runs == [1]  # which the next process reads instead of nvdisasm


def test_an_unwritable_cache_is_skipped(fresh, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GWATCH_CACHE_DIR", str(blocker))
    cubin = sass_cubins.cubins()[NAME]
    assert fresh(cubin) == disassemble(cubin)

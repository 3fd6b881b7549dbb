"""nvdisasm run once per input and options in a test session. Many test files read the same
cubins (the census, the corpus, the fixtures), and one nvdisasm run costs 0.3 s or more
however small its input; the workers of one session share what it printed through a folder
that conftest.py makes (named by GWATCH_TEST_NVDISASM), keyed by the tool, the options and
the input's SHA-256. Only successful runs are kept: a failing one runs again, so its error is
always nvdisasm's own."""
import hashlib
import os
import subprocess
import tempfile

from gwatch_nb import toolchain

NVDISASM = toolchain.nvdisasm(90)
FOLDER = "GWATCH_TEST_NVDISASM"


def output(data: bytes, *options: str) -> str:
    """nvdisasm's standard output for `data` (a cubin, or a bare text with `-b SM90a`); a failed
    run raises CalledProcessError, as subprocess.run(check=True) does."""
    folder = os.environ.get(FOLDER)
    kept = folder and os.path.join(folder, hashlib.sha256(repr((NVDISASM, options)).encode() + data).hexdigest())
    if kept and os.path.exists(kept):
        with open(kept, encoding="utf-8") as f:
            return f.read()
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "input.cubin")
        with open(path, "wb") as f:
            f.write(data)
        text = subprocess.run([NVDISASM, *options, path], capture_output=True, text=True, check=True).stdout
    if kept:
        partial = f"{kept}.{os.getpid()}.partial"
        with open(partial, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(partial, kept)  # whole or absent, for a worker reading it meanwhile
    return text


def keep_library_runs() -> None:
    """gwatch_nb's own disassembly reads the session's runs too; a cubin nvdisasm refuses goes
    to the library's run, which names the kernel and the instruction."""
    from gwatch_nb.sass import disasm
    library_run = disasm._run_nvdisasm

    def run(cubin: bytes, kernels: list[str]) -> str:
        try:
            return output(cubin, *disasm.OPTIONS)
        except subprocess.CalledProcessError:
            return library_run(cubin, kernels)

    disasm._run_nvdisasm = run

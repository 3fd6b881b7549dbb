"""The kernel clock reads CUPTI's kernel activity records at fixed offsets
(gwatch_nb/cuda/activity.py); they must be the offsets of CUPTI's own struct, compiled from
its header, for every version of the kernel record a CUPTI 12 or 13 may deliver."""
import glob
import os
import shutil
import subprocess

import pytest

from gwatch_nb.cuda import activity

HEADERS = sorted(glob.glob("/usr/local/cuda*/include/cupti_activity.h"))
RECORDS = [f"CUpti_ActivityKernel{n}" for n in range(4, 11)]


@pytest.mark.skipif(not HEADERS or not shutil.which("gcc"), reason="needs gcc and CUDA's CUPTI headers")
def test_the_clock_reads_each_kernel_record_at_cuptis_own_offsets(tmp_path):
    source = tmp_path / "offsets.c"
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <cupti_activity.h>",
             "#include <cupti_activity_deprecated.h>", "int main(void) {"]
    lines += [f'printf("%zu %zu %zu %zu\\n", offsetof({r}, start), offsetof({r}, end), '
              f'offsetof({r}, correlationId), offsetof({r}, name));' for r in RECORDS]
    source.write_text("\n".join(lines + ["return 0; }"]))
    binary = tmp_path / "offsets"
    subprocess.run(["gcc", f"-I{os.path.dirname(HEADERS[-1])}", str(source), "-o", str(binary)], check=True)
    printed = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.split("\n")[:-1]
    ours = (activity._START, activity._END, activity._CORRELATION, activity._NAME)
    assert {record: tuple(map(int, line.split())) for record, line in zip(RECORDS, printed)} == \
        {record: ours for record in RECORDS}

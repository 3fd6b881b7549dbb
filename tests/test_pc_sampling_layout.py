"""The PC sampling binding declares CUPTI's structures by hand (gwatch_nb/cuda/pc_sampling.py);
each size and field offset must be the one gcc gives CUPTI's own header."""
import ctypes
import glob
import os
import shutil
import subprocess

import pytest

from gwatch_nb.cuda import pc_sampling as pcs

HEADERS = sorted(glob.glob("/usr/local/cuda*/include/cupti_pcsampling.h"))

#: (our structure, CUPTI's type, {our field: CUPTI's field})
STRUCTURES = [
    (pcs.StallReason, "CUpti_PCSamplingStallReason", {"index": "pcSamplingStallReasonIndex", "samples": "samples"}),
    (pcs.PCData, "CUpti_PCSamplingPCData", {f: f for f in ("size", "cubinCrc", "pcOffset", "functionIndex",
                                                           "functionName", "stallReasonCount", "stallReason",
                                                           "correlationId")}),
    (pcs.SamplingData, "CUpti_PCSamplingData", {f: f for f in (
        "size", "collectNumPcs", "totalSamples", "droppedSamples", "totalNumPcs", "remainingNumPcs", "rangeId",
        "pPcData", "nonUsrKernelsTotalSamples", "hardwareBufferFull")}),
    (pcs.ConfigurationInfo, "CUpti_PCSamplingConfigurationInfo",
     {"attributeType": "attributeType", "attributeStatus": "attributeStatus", "data": "attributeData"}),
    (pcs._ContextParams, "CUpti_PCSamplingStartParams", {"ctx": "ctx"}),
    (pcs._ConfigurationParams, "CUpti_PCSamplingConfigurationInfoParams",
     {"numAttributes": "numAttributes", "pPCSamplingConfigurationInfo": "pPCSamplingConfigurationInfo"}),
    (pcs._GetDataParams, "CUpti_PCSamplingGetDataParams", {"pcSamplingData": "pcSamplingData"}),
    (pcs._NumReasonsParams, "CUpti_PCSamplingGetNumStallReasonsParams", {"numStallReasons": "numStallReasons"}),
    (pcs._ReasonsParams, "CUpti_PCSamplingGetStallReasonsParams",
     {"numStallReasons": "numStallReasons", "stallReasonIndex": "stallReasonIndex", "stallReasons": "stallReasons"}),
]
#: The union members the binding writes, at the union's start: (CUPTI's member path, our view).
UNION_MEMBERS = ["samplingPeriodData.samplingPeriod", "stallReasonData.stallReasonCount",
                 "samplingDataBufferData.samplingDataBuffer", "enableStartStopControlData.enableStartStopControl"]


@pytest.mark.skipif(not HEADERS or not shutil.which("gcc"), reason="needs gcc and CUDA's CUPTI headers")
def test_every_structure_has_cuptis_own_size_and_offsets(tmp_path):
    source = tmp_path / "layout.c"
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <cupti_pcsampling.h>", "int main(void) {"]
    for _, theirs, fields in STRUCTURES:
        lines.append(f'printf("%zu\\n", sizeof({theirs}));')
        lines += [f'printf("%zu\\n", offsetof({theirs}, {field}));' for field in fields.values()]
    lines += [f'printf("%zu\\n", offsetof(CUpti_PCSamplingConfigurationInfo, attributeData.{m}));'
              for m in UNION_MEMBERS]
    lines.append('printf("%zu\\n", offsetof(CUpti_PCSamplingConfigurationInfo, '
                 'attributeData.stallReasonData.pStallReasonIndex));')
    source.write_text("\n".join(lines + ["return 0; }"]))
    binary = tmp_path / "layout"
    include = os.path.dirname(HEADERS[-1])
    subprocess.run(["gcc", f"-I{include}", str(source), "-o", str(binary)], check=True)
    printed = iter(map(int, subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout.split()))
    for ours, theirs, fields in STRUCTURES:
        assert (theirs, ctypes.sizeof(ours)) == (theirs, next(printed))
        for field in fields:
            assert (theirs, field, getattr(ours, field).offset) == (theirs, field, next(printed))
    union = pcs.ConfigurationInfo.data.offset
    assert [next(printed) for _ in UNION_MEMBERS] == [union] * len(UNION_MEMBERS)
    assert next(printed) == union + 8  # the reasons' pointer: words[1]

"""Warp stall samples from CUPTI's PC sampling API, one launch at a time.

Every 2^period cycles each SM's sampler picks one of its warps and notes the instruction it
is at (its PC) and why it is not issuing (its stall reason, or "selected" when it issues).
CUPTI gathers those per PC; we read them back as (function, PC offset, reason, samples).

The sampler brackets one launch at a time (start/stop control, the GPU synchronized before
and after), so every PC of a range is the launch's own. The structures are cupti_pcsampling.h's;
tests/test_pc_sampling_layout.py compiles that header and checks every size and offset here."""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

from ..errors import CuptiUnavailableError
from ..stall_reasons import STALL_REASON_PREFIX
from . import cupti, driver

#: CUpti_PCSamplingConfigurationAttributeType
_SAMPLING_PERIOD, _STALL_REASON = 1, 2
_COLLECTION_MODE, _START_STOP_CONTROL, _OUTPUT_FORMAT, _DATA_BUFFER = 5, 6, 7, 8
_CONTINUOUS, _PARSED = 1, 1
_REASON_NAME_BYTES = 128  # CUPTI_STALL_REASON_STRING_SIZE
#: PCs read back per call; a range with more is read in several calls.
PCS_PER_READ = 4096


class StallReason(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("index", ctypes.c_uint32), ("samples", ctypes.c_uint32)]


class PCData(ctypes.Structure):
    """CUpti_PCSamplingPCData (packed, aligned to 8: 60 bytes of fields, 64 in all)."""
    _pack_ = 1
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("cubinCrc", ctypes.c_uint64),
        ("pcOffset", ctypes.c_uint64),
        ("functionIndex", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("functionName", ctypes.c_char_p),
        ("stallReasonCount", ctypes.c_size_t),
        ("stallReason", ctypes.POINTER(StallReason)),
        ("correlationId", ctypes.c_uint32),
        ("_tail", ctypes.c_uint8 * 4),
    ]


class SamplingData(ctypes.Structure):
    """CUpti_PCSamplingData (packed, aligned to 8: 73 bytes of fields, 80 in all)."""
    _pack_ = 1
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("collectNumPcs", ctypes.c_size_t),
        ("totalSamples", ctypes.c_uint64),
        ("droppedSamples", ctypes.c_uint64),
        ("totalNumPcs", ctypes.c_size_t),
        ("remainingNumPcs", ctypes.c_size_t),
        ("rangeId", ctypes.c_uint64),
        ("pPcData", ctypes.POINTER(PCData)),
        ("nonUsrKernelsTotalSamples", ctypes.c_uint64),
        ("hardwareBufferFull", ctypes.c_uint8),
        ("_tail", ctypes.c_uint8 * 7),
    ]


class _AttributeData(ctypes.Union):
    """Its members as used here: a 32-bit value, a pointer, or (count, pointer) for the reasons."""
    _fields_ = [("words", ctypes.c_uint64 * 3), ("u32", ctypes.c_uint32), ("pointer", ctypes.c_void_p)]


class ConfigurationInfo(ctypes.Structure):
    """CUpti_PCSamplingConfigurationInfo: a type, a status, and a union of at most 24 bytes."""
    _fields_ = [("attributeType", ctypes.c_int), ("attributeStatus", ctypes.c_int), ("data", _AttributeData)]


#: Every params struct of these calls begins (size, pPriv, ctx); the call's own fields follow.
_HEAD = [("size", ctypes.c_size_t), ("pPriv", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


class _ContextParams(ctypes.Structure):
    """The params of cuptiPCSamplingEnable, Disable, Start and Stop: the head alone."""
    _fields_ = _HEAD


class _ConfigurationParams(ctypes.Structure):
    _fields_ = _HEAD + [("numAttributes", ctypes.c_size_t),
                        ("pPCSamplingConfigurationInfo", ctypes.POINTER(ConfigurationInfo))]


class _GetDataParams(ctypes.Structure):
    _fields_ = _HEAD + [("pcSamplingData", ctypes.POINTER(SamplingData))]


class _NumReasonsParams(ctypes.Structure):
    _fields_ = _HEAD + [("numStallReasons", ctypes.POINTER(ctypes.c_size_t))]


class _ReasonsParams(ctypes.Structure):
    _fields_ = _HEAD + [("numStallReasons", ctypes.c_size_t), ("stallReasonIndex", ctypes.POINTER(ctypes.c_uint32)),
                        ("stallReasons", ctypes.POINTER(ctypes.c_char_p))]


@dataclass(frozen=True)
class Range:
    """What one sampled launch left: per (function, PC offset, reason index) its samples, and
    CUPTI's own totals (`total` counts every sample of the range, kept or not)."""
    samples: dict[tuple[str, int, int], int]
    total: int
    dropped: int
    outside_user_kernels: int


class Sampler:
    """PC sampling enabled on one CUDA context until ``close()``: ``bracket_start()`` just
    before a launch and ``bracket_stop()`` after it give that launch's samples.

    CUPTI charges PCs only to modules it knows: those loaded when sampling was first enabled
    in the process, and those loaded while it is enabled. A module loaded after an earlier
    close, while sampling was off, is "not a user kernel" to it: all its samples come back
    without a PC (on the H200, 2,928 of 2,928). So the sessions load the code they sample
    while a sampler is enabled (stall_sampling.LaunchSampling.prepare). And sampling must be
    closed when a session ends: while enabled, CUPTI's kernel activity records cannot be
    enabled (CUPTI_ERROR_NOT_COMPATIBLE) and no other profiler can reach the GPU."""

    def __init__(self, context: int):
        self.context = context
        self._lib = _library()
        self._check(self._lib.cuptiPCSamplingEnable(self._params()), "cuptiPCSamplingEnable")
        try:
            self.reasons = self._reason_names()
            self._configure()
            self.default_period = self.period = self._period_in_force()
        except BaseException:  # never left enabled: that would keep the kernel clock and other profilers out
            self.close()
            raise

    def close(self) -> None:
        self._lib.cuptiPCSamplingDisable(self._params())

    def use_period(self, period: int | None) -> None:
        """Sample every 2^period cycles from the next bracket on (None: CUPTI's default;
        options.check_stalls has held `period` to stall_reasons.PERIODS)."""
        wanted = self.default_period if period is None else period
        if wanted != self.period:
            self._set([(_SAMPLING_PERIOD, wanted)])
            self.period = wanted

    def bracket_start(self) -> None:
        driver.synchronize_context(self.context)
        self._check(self._lib.cuptiPCSamplingStart(self._params()), "cuptiPCSamplingStart")

    def bracket_stop(self) -> Range:
        driver.synchronize_context(self.context)
        self._check(self._lib.cuptiPCSamplingStop(self._params()), "cuptiPCSamplingStop")
        taken = _Taken()
        taken.add(self._data)  # what CUPTI may have left in the configured buffer at the stop
        params = self._params(_GetDataParams, ctypes.pointer(self._data))
        while True:
            self._check(self._lib.cuptiPCSamplingGetData(params), "cuptiPCSamplingGetData")
            more = self._data.remainingNumPcs
            taken.add(self._data)
            if not more:
                return taken.range()

    # ---------------------------------------------------------------- set-up

    def _params(self, kind: type = _ContextParams, *fields):
        """A `kind` params struct for this context: its size, no private data, then `fields`."""
        return ctypes.byref(kind(ctypes.sizeof(kind), None, self.context, *fields))

    def _reason_names(self) -> dict[int, str]:
        count = ctypes.c_size_t()
        self._check(self._lib.cuptiPCSamplingGetNumStallReasons(self._params(_NumReasonsParams, ctypes.pointer(count))),
                    "cuptiPCSamplingGetNumStallReasons")
        n = count.value
        indices = (ctypes.c_uint32 * n)()
        texts = [ctypes.create_string_buffer(_REASON_NAME_BYTES) for _ in range(n)]
        names = (ctypes.c_char_p * n)(*[ctypes.cast(t, ctypes.c_char_p) for t in texts])
        self._check(self._lib.cuptiPCSamplingGetStallReasons(self._params(_ReasonsParams, n, indices, names)),
                    "cuptiPCSamplingGetStallReasons")
        names = {int(indices[k]): texts[k].value.decode(errors="replace") for k in range(n)}
        # Besides the reasons CUPTI lists two counters of its own (smsp__pcsamp_sample_count and
        # smsp__pcsamp_samples_data_dropped), whose totals SamplingData already carries.
        stalls = sorted(k for k, name in names.items() if name.startswith(STALL_REASON_PREFIX))
        self._reason_indices = (ctypes.c_uint32 * len(stalls))(*stalls)
        return {k: names[k] for k in stalls}

    def _configure(self) -> None:
        n = len(self.reasons)
        self._pcs = (PCData * PCS_PER_READ)()
        self._reason_slots = (StallReason * (PCS_PER_READ * n))()
        for k in range(PCS_PER_READ):
            self._pcs[k].size = ctypes.sizeof(PCData)
            self._pcs[k].stallReason = ctypes.cast(ctypes.byref(self._reason_slots, k * n * ctypes.sizeof(StallReason)),
                                                   ctypes.POINTER(StallReason))
        self._data = SamplingData(size=ctypes.sizeof(SamplingData), collectNumPcs=PCS_PER_READ,
                                  pPcData=ctypes.cast(self._pcs, ctypes.POINTER(PCData)))
        # The hardware buffer keeps CUPTI's default (512 MiB): what overflows it is counted as dropped.
        self._set([(_STALL_REASON, None), (_START_STOP_CONTROL, 1), (_COLLECTION_MODE, _CONTINUOUS),
                   (_OUTPUT_FORMAT, _PARSED), (_DATA_BUFFER, ctypes.addressof(self._data))])

    def _set(self, settings: list[tuple[int, int | None]]) -> None:
        infos = (ConfigurationInfo * len(settings))()
        for info, (kind, value) in zip(infos, settings):
            info.attributeType = kind
            if kind == _STALL_REASON:
                info.data.words[0] = len(self.reasons)
                info.data.words[1] = ctypes.addressof(self._reason_indices)
            elif kind == _DATA_BUFFER:
                info.data.pointer = value
            else:
                info.data.u32 = value
        code = self._lib.cuptiPCSamplingSetConfigurationAttribute(
            self._params(_ConfigurationParams, len(settings), infos))
        if code:
            failed = [kind for info, (kind, _) in zip(infos, settings) if info.attributeStatus]
            raise CuptiUnavailableError(f"PC sampling could not be configured ({_result(code)}; attributes {failed})")

    def _period_in_force(self) -> int:
        info = ConfigurationInfo(attributeType=_SAMPLING_PERIOD)
        self._check(self._lib.cuptiPCSamplingGetConfigurationAttribute(
            self._params(_ConfigurationParams, 1, ctypes.pointer(info))), "cuptiPCSamplingGetConfigurationAttribute")
        return int(info.data.u32)

    @staticmethod
    def _check(code: int, what: str) -> None:
        if code:
            raise CuptiUnavailableError(f"{what} failed: {_result(code)}")


class _Taken:
    """The samples of one range, read from the data buffer as CUPTI fills it (each read empties it)."""

    def __init__(self):
        self.samples: dict[tuple[str, int, int], int] = {}
        self.total = self.dropped = self.outside = 0

    def add(self, data: SamplingData) -> None:
        for k in range(data.totalNumPcs):
            pc = data.pPcData[k]
            name = pc.functionName.decode(errors="replace") if pc.functionName else "?"
            for r in range(pc.stallReasonCount):
                reason = pc.stallReason[r]
                if reason.samples:
                    key = (name, int(pc.pcOffset), int(reason.index))
                    self.samples[key] = self.samples.get(key, 0) + int(reason.samples)
        self.total += data.totalSamples
        self.dropped += data.droppedSamples
        self.outside += data.nonUsrKernelsTotalSamples
        data.totalNumPcs = data.remainingNumPcs = data.totalSamples = 0
        data.droppedSamples = data.nonUsrKernelsTotalSamples = data.hardwareBufferFull = 0

    def range(self) -> Range:
        return Range(self.samples, int(self.total), int(self.dropped), int(self.outside))


def _result(code: int) -> str:
    return cupti.load().result_string(code)


@functools.cache
def _library():
    """The process's CUPTI with the PC sampling functions declared."""
    lib = cupti.load().lib
    for name, params in (("cuptiPCSamplingEnable", _ContextParams), ("cuptiPCSamplingDisable", _ContextParams),
                         ("cuptiPCSamplingStart", _ContextParams), ("cuptiPCSamplingStop", _ContextParams),
                         ("cuptiPCSamplingGetData", _GetDataParams),
                         ("cuptiPCSamplingGetNumStallReasons", _NumReasonsParams),
                         ("cuptiPCSamplingGetStallReasons", _ReasonsParams),
                         ("cuptiPCSamplingSetConfigurationAttribute", _ConfigurationParams),
                         ("cuptiPCSamplingGetConfigurationAttribute", _ConfigurationParams)):
        function = getattr(lib, name, None)
        if function is None:
            raise CuptiUnavailableError(f"this CUPTI ({cupti.load().path}) has no {name}")
        function.argtypes = [ctypes.POINTER(params)]
        function.restype = ctypes.c_int
    return lib

"""One run of a comparison: its trace, label and the per-warp figures the tables are built from."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..analysis import warp_activity
from ..trace import WARP_KEY, Trace


@dataclass
class Run:
    label: str
    trace: Trace

    @functools.cached_property
    def df(self) -> pd.DataFrame:
        return self.trace.df

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of what the run recorded (every number of its instances, its launches'
        durations), never of its label: it seeds the bootstrap, so the same traces give the
        same intervals whatever they are called."""
        digest = hashlib.blake2b(digest_size=8)
        numbers = self.df.select_dtypes("number")
        for column in numbers:
            digest.update(column.encode() + np.ascontiguousarray(numbers[column].to_numpy(np.int64)).tobytes())
        launches = self.trace.launches
        durations = launches["duration_ns"].to_numpy(np.int64) if len(launches) else np.zeros(0, np.int64)
        digest.update(np.ascontiguousarray(durations).tobytes())
        return digest.hexdigest()

    @functools.cached_property
    def activity(self) -> pd.DataFrame:
        return warp_activity(self.trace)

    @functools.cached_property
    def warp_time_ns(self) -> int:
        return int(self.activity["lifetime_ns"].sum())

    def scope_ids(self) -> dict[int, str]:
        return {int(s): self.trace.scope_name(s) for s in np.unique(self.df["scope_id"].to_numpy())}

    @functools.cached_property
    def warp_of_row(self) -> tuple[np.ndarray, int]:
        """Each instance's warp (unit) index, and how many warps have instances."""
        codes = self.df.groupby(list(WARP_KEY), observed=True, sort=False).ngroup().to_numpy()
        return codes, int(codes.max()) + 1 if len(codes) else 0

    def unit_matrix(self, by: list[str], keys: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        """(sums, counts) of instance durations per warp × group, the groups being ``keys``
        (values of the ``by`` columns); instances of other groups are left out."""
        warp, warps = self.warp_of_row
        code = np.zeros(len(self.df), np.int64)
        for column in by:  # one integer per row for its values of ``by``, the same for the keys
            values = self.df[column].to_numpy().astype(np.int64)
            code = code * (1 << 31) + values
        wanted = np.zeros(len(keys), np.int64)
        for i in range(len(by)):
            wanted = wanted * (1 << 31) + np.array([k[i] for k in keys], np.int64)
        order = np.argsort(wanted)
        position = np.searchsorted(wanted[order], code)
        found = position < len(keys)
        found[found] &= wanted[order][position[found]] == code[found]
        column_of_row = order[position[found]]
        flat = warp[found] * len(keys) + column_of_row
        size = warps * len(keys)
        sums = np.bincount(flat, weights=self.df["duration_ns"].to_numpy()[found], minlength=size)
        counts = np.bincount(flat, minlength=size).astype(np.float64)
        return sums.reshape(warps, len(keys)), counts.reshape(warps, len(keys))

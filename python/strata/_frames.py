"""A pandas DataFrame's columns in the form strata._strata.columns_to_arrow_stream takes."""

from __future__ import annotations

from typing import Any

__all__ = ["frame_columns"]


def frame_columns(frame: Any) -> list[tuple[str, Any, str | None]]:
    """A pandas DataFrame's columns as strata._strata.columns_to_arrow_stream takes them (a
    non-default index becomes a leading column, as pyarrow's from_pandas keeps it)."""
    import numpy as np

    if not (type(frame.index).__name__ == "RangeIndex" and frame.index.name is None):
        frame = frame.reset_index()
    columns = []
    for name in frame.columns:
        series = frame[name]
        dtype = series.dtype
        kind = getattr(dtype, "kind", "O")
        if kind == "M":  # datetime64, naive or timezone-aware
            tz = getattr(series.dt, "tz", None)
            values = series.dt.tz_convert("UTC").dt.tz_localize(None) if tz is not None else series
            micros = values.to_numpy(dtype="datetime64[us]").view(np.int64)
            columns.append((str(name), micros, "" if tz is None else _tz_name(tz)))
        elif kind in "biuf" and isinstance(dtype, np.dtype):
            columns.append((str(name), series.to_numpy(), None))
        else:  # object, string and nullable extension dtypes: Python values, None for missing
            values = series.astype(object).where(series.notna(), None).tolist()
            columns.append((str(name), values, None))
    return columns


def _tz_name(tz: Any) -> str:
    """An Arrow time zone for a tzinfo: its IANA name, "UTC", or a fixed offset "+HH:MM"
    (as pyarrow names them)."""
    for attr in ("key", "zone"):  # zoneinfo.ZoneInfo, pytz
        name = getattr(tz, attr, None)
        if isinstance(name, str):
            return name
    offset = tz.utcoffset(None)
    if offset is None:
        return str(tz)
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"

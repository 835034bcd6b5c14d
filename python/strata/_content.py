"""What add() does with its ``content`` argument, the same for the embedded Context and its
remote twins (lance-context §5, content normalisation)."""

from __future__ import annotations

from typing import Any

__all__ = ["ARROW_STREAM_CONTENT_TYPE", "normalise_content"]

ARROW_STREAM_CONTENT_TYPE = "application/vnd.apache.arrow.stream"


def normalise_content(content: Any, content_type: str | None) -> tuple[dict[str, Any], str | None]:
    """The payload fields of ``content`` and its content type (``content_type`` wins when
    given): str -> text_payload (text/plain); bytes-like -> binary_payload
    (application/octet-stream); a pandas DataFrame -> Arrow IPC stream bytes written by strata
    itself; a pyarrow Table / RecordBatch, a polars DataFrame or anything with ``to_arrow()``
    -> Arrow IPC stream bytes written by pyarrow; a PIL image -> its encoded bytes with the
    image's MIME type (PNG when it has no format). None: no payload."""
    if content is None:
        return {}, content_type
    if isinstance(content, str):
        return {"text_payload": content}, content_type or "text/plain"
    if isinstance(content, (bytes, bytearray, memoryview)):
        return {"binary_payload": bytes(content)}, content_type or "application/octet-stream"
    module = type(content).__module__
    if module.startswith("pandas.") and type(content).__name__ == "DataFrame":
        from . import _strata
        from ._frames import frame_columns

        data = _strata.columns_to_arrow_stream(frame_columns(content))
        return {"binary_payload": data}, content_type or ARROW_STREAM_CONTENT_TYPE
    if module.startswith(("polars.", "pyarrow.")) or callable(getattr(content, "to_arrow", None)):
        return {"binary_payload": _pyarrow_stream(content)}, (
            content_type or ARROW_STREAM_CONTENT_TYPE)
    if module.startswith("PIL."):
        data, mime = _image_bytes(content)
        return {"binary_payload": data}, content_type or mime
    raise TypeError(
        "content must be str, bytes, a DataFrame, an Arrow table or an image, found "
        f"{type(content).__name__}"
    )


def _pyarrow_stream(value: Any) -> bytes:
    try:
        import pyarrow as pa
    except ImportError as e:
        raise ImportError(
            f"content of type {type(value).__name__} is written as Arrow IPC by pyarrow, which "
            "is not installed"
        ) from e
    if isinstance(value, pa.RecordBatch):
        table = pa.Table.from_batches([value])
    elif isinstance(value, pa.Table):
        table = value
    else:
        table = value.to_arrow()
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _image_bytes(image: Any) -> tuple[bytes, str]:
    import io

    from PIL import Image

    fmt = image.format or "PNG"
    mime = Image.MIME.get(fmt.upper(), "application/octet-stream")
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue(), mime

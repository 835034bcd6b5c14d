// Helpers shared by the columnar implementation files (not part of the public API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/array.h"
#include "strata/buffer.h"
#include "strata/status.h"

namespace strata::columnar_internal {

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code points past
// U+10FFFF). Defined in array_validate.cc.
bool IsValidUtf8(std::string_view bytes);

// Bitmap appends for builders (defined in builder.cc). `out` holds a bitmap of `dst_length`
// bits whose bits past dst_length are zero; afterwards it holds BytesForBits(dst_length + n)
// bytes, still zero past the new end.
void AppendBits(BufferBuilder* out, int64_t dst_length, const uint8_t* src, int64_t src_offset,
                int64_t n);
void AppendSetBits(BufferBuilder* out, int64_t dst_length, int64_t n);

// InvalidArgument unless [offset, offset + length) lies within the array.
Status CheckSliceBounds(const Array& array, int64_t offset, int64_t length);

// InvalidArgument unless `array` has type `expected`; `what` names the caller.
Status CheckSameType(const Array& array, const DataType& expected, std::string_view what);

// Largest index a dictionary index type can hold (int64 max for 64-bit types).
int64_t MaxIndex(const DataType& index_type);

// Array::Make over the given layout (validated).
Result<Array> MakeArray(DataTypePtr type, int64_t length, int64_t null_count,
                        std::vector<Buffer> buffers, std::vector<ArrayDataPtr> children = {},
                        ArrayDataPtr dictionary = nullptr);

// The index array of a dictionary array (same rows, offset and validity; no dictionary).
Array DictionaryIndices(const Array& dictionary_array);

}  // namespace strata::columnar_internal

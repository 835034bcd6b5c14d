// Text forms of types and schemas: the type syntax DataType::ToString() prints, and schema
// files as JSON. Used by the CLI (--schema) and anywhere a user declares a schema.
//
// Type syntax (whitespace-insensitive; ParseDataType(t->ToString()) equals t):
//   bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64
//   utf8 large_utf8 binary large_binary          (aliases: boolean, float, double, string)
//   timestamp[us]  timestamp[us, tz=UTC]
//   list<T>  large_list<T>  fixed_size_list<T>[N]   where T is `type` or `name: type [not null]`
//   struct<name: type [not null], ...>
//   dictionary<values=utf8, indices=int32[, ordered]>   (shorthand: dictionary<utf8>)
//
// Schema JSON:
//   {"fields": [{"name": "id", "type": "utf8", "nullable": false,
//                "metadata": {"k": "v"}}, ...],
//    "metadata": {"k": "v"}}
// "nullable" defaults to true; "metadata" is optional.
#pragma once

#include <string>
#include <string_view>

#include "strata/status.h"
#include "strata/type.h"

namespace strata {

// InvalidArgument naming the position and what was expected.
Result<DataTypePtr> ParseDataType(std::string_view text);
Result<SchemaPtr> SchemaFromJson(std::string_view json);
// Pretty-printed JSON that SchemaFromJson reads back to an equal schema.
std::string SchemaToJson(const Schema& schema);

}  // namespace strata

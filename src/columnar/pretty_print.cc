// Text rendering: Array::ToString / ValueToString, RecordBatch::ToString, FormatTable and
// FormatSchema. Values print JSON-like (strings quoted and escaped, binary as base64,
// timestamps as RFC 3339 UTC, floats shortest round-trip); long lists are elided in the
// middle so one huge value cannot flood a log line.
#include "strata/pretty_print.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "columnar/json_text.h"
#include "strata/array.h"
#include "util/text_codec.h"

namespace strata {
namespace {

// Lists longer than 2 * kEdgeItems show only kEdgeItems at each end.
constexpr int64_t kEdgeItems = 10;

// How a top-level string-like value is written: quoted JSON style, or bare for table cells
// (nested values inside a cell stay JSON style).
enum class Quoting { kJson, kBare };

void AppendEscaped(std::string* out, std::string_view s, Quoting quoting) {
  if (quoting == Quoting::kJson) {
    // The JSON codec's quoting, with invalid UTF-8 shown as U+FFFD.
    json::internal::AppendQuoted(s, /*replace_invalid=*/true, out);
    return;
  }
  // Bare table cells: only characters that would break the layout are escaped.
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(ch);
        }
    }
  }
}

template <typename T>
void AppendFloat(std::string* out, T v) {
  if (std::isnan(v)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out->append(v > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  out->append(buf, res.ptr);
}

void AppendValue(std::string* out, const Array& a, int64_t i, Quoting quoting);

// "[x, y, ...N more..., z]" over rows [begin, end) of `values`.
void AppendList(std::string* out, const Array& values, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  const bool elide = n > 2 * kEdgeItems;
  out->push_back('[');
  for (int64_t k = 0; k < n; ++k) {
    if (k > 0) out->append(", ");
    if (elide && k == kEdgeItems) {
      *out += fmt::format("...{} more...", n - 2 * kEdgeItems);
      k = n - kEdgeItems - 1;
      continue;
    }
    AppendValue(out, values, begin + k, Quoting::kJson);
  }
  out->push_back(']');
}

void AppendValue(std::string* out, const Array& a, int64_t i, Quoting quoting) {
  if (a.IsNull(i)) {
    out->append("null");
    return;
  }
  switch (a.type_id()) {
    case TypeId::kBool:
      out->append(a.BoolValue(i) ? "true" : "false");
      return;
    case TypeId::kInt8:
      *out += fmt::format("{}", a.Value<int8_t>(i));
      return;
    case TypeId::kInt16:
      *out += fmt::format("{}", a.Value<int16_t>(i));
      return;
    case TypeId::kInt32:
      *out += fmt::format("{}", a.Value<int32_t>(i));
      return;
    case TypeId::kInt64:
      *out += fmt::format("{}", a.Value<int64_t>(i));
      return;
    case TypeId::kUInt8:
      *out += fmt::format("{}", a.Value<uint8_t>(i));
      return;
    case TypeId::kUInt16:
      *out += fmt::format("{}", a.Value<uint16_t>(i));
      return;
    case TypeId::kUInt32:
      *out += fmt::format("{}", a.Value<uint32_t>(i));
      return;
    case TypeId::kUInt64:
      *out += fmt::format("{}", a.Value<uint64_t>(i));
      return;
    case TypeId::kFloat32:
      AppendFloat(out, a.Value<float>(i));
      return;
    case TypeId::kFloat64:
      AppendFloat(out, a.Value<double>(i));
      return;
    case TypeId::kTimestamp:
      AppendEscaped(out, FormatTimestampMicros(a.Value<int64_t>(i)), quoting);
      return;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      AppendEscaped(out, a.StringValue(i), quoting);
      return;
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      AppendEscaped(out, Base64Encode(a.StringValue(i)), quoting);
      return;
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      const auto [begin, end] = a.ValueRange(i);
      AppendList(out, a.values_array(), begin, end);
      return;
    }
    case TypeId::kStruct: {
      out->push_back('{');
      const auto& fields = a.type()->fields();
      for (int k = 0; k < a.num_fields(); ++k) {
        if (k > 0) out->append(", ");
        out->append(fields[k]->name());
        out->append(": ");
        AppendValue(out, Array(a.data()->children[k]), a.offset() + i, Quoting::kJson);
      }
      out->push_back('}');
      return;
    }
    case TypeId::kDictionary:
      AppendValue(out, a.dictionary(), a.DictionaryIndex(i), quoting);
      return;
  }
}

// ---- tables ----

// Display width in code points (continuation bytes do not count).
int64_t DisplayWidth(std::string_view s) {
  int64_t w = 0;
  for (char c : s) w += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return w;
}

// Cuts `s` to at most `width` code points, the last being "…".
std::string Truncate(std::string s, int64_t width) {
  if (DisplayWidth(s) <= width) return s;
  const int64_t keep = std::max<int64_t>(width - 1, 0);
  int64_t seen = 0;
  size_t cut = 0;
  for (; cut < s.size(); ++cut) {
    if ((static_cast<unsigned char>(s[cut]) & 0xC0) != 0x80) {
      if (seen == keep) break;
      ++seen;
    }
  }
  s.resize(cut);
  return s + "…";
}

void AppendPadded(std::string* out, const std::string& s, int64_t width, bool right) {
  const int64_t pad = std::max<int64_t>(width - DisplayWidth(s), 0);
  if (right) out->append(static_cast<size_t>(pad), ' ');
  out->append(s);
  if (!right) out->append(static_cast<size_t>(pad), ' ');
}

}  // namespace

std::string Array::ValueToString(int64_t i) const {
  std::string out;
  AppendValue(&out, *this, i, Quoting::kJson);
  return out;
}

std::string Array::ToString() const {
  if (!is_valid_handle()) return "<null array>";
  std::string out;
  AppendList(&out, *this, 0, length());
  return out;
}

std::string RecordBatch::ToString() const {
  std::string out = schema_ ? FormatSchema(*schema_) : std::string();
  out.append("--\n");
  const int64_t n = num_rows_;
  for (int64_t r = 0; r < n; ++r) {
    if (n > 2 * kEdgeItems && r == kEdgeItems) {
      out += fmt::format("...{} more rows...\n", n - 2 * kEdgeItems);
      r = n - kEdgeItems - 1;
      continue;
    }
    out.push_back('{');
    for (int c = 0; c < num_columns(); ++c) {
      if (c > 0) out.append(", ");
      out.append(schema_->field(c)->name());
      out.append(": ");
      AppendValue(&out, columns_[c], r, Quoting::kJson);
    }
    out.append("}\n");
  }
  return out;
}

std::string FormatTable(const std::vector<RecordBatch>& batches,
                        const TableFormatOptions& options) {
  int64_t total = 0;
  for (const RecordBatch& b : batches) total += b.num_rows();
  std::string footer = fmt::format("({} row{})\n", total, total == 1 ? "" : "s");
  if (batches.empty() || batches[0].schema() == nullptr) return footer;
  const Schema& schema = *batches[0].schema();
  const int num_columns = schema.num_fields();
  const int64_t max_width = std::max(options.max_cell_width, 1);
  const int64_t shown = options.max_rows < 0 ? total : std::min(options.max_rows, total);

  std::vector<std::vector<std::string>> cells(num_columns);
  std::vector<int64_t> widths(num_columns);
  std::vector<bool> right(num_columns);
  for (int c = 0; c < num_columns; ++c) {
    const DataType& type = *schema.field(c)->type();
    right[c] = type.is_numeric() ||
               (type.id() == TypeId::kDictionary && type.dictionary_value_type()->is_numeric());
    widths[c] = DisplayWidth(Truncate(schema.field(c)->name(), max_width));
    cells[c].reserve(static_cast<size_t>(shown));
  }
  int64_t row = 0;
  for (const RecordBatch& batch : batches) {
    for (int64_t r = 0; r < batch.num_rows() && row < shown; ++r, ++row) {
      for (int c = 0; c < num_columns && c < batch.num_columns(); ++c) {
        std::string cell;
        AppendValue(&cell, batch.column(c), r, Quoting::kBare);
        cell = Truncate(std::move(cell), max_width);
        widths[c] = std::max(widths[c], DisplayWidth(cell));
        cells[c].push_back(std::move(cell));
      }
    }
  }

  std::string out;
  for (int c = 0; c < num_columns; ++c) {
    out.append(c == 0 ? " " : " | ");
    AppendPadded(&out, Truncate(schema.field(c)->name(), max_width), widths[c], right[c]);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  out.push_back('\n');
  for (int c = 0; c < num_columns; ++c) {
    if (c > 0) out.push_back('+');
    out.append(static_cast<size_t>(widths[c] + 2), '-');
  }
  out.push_back('\n');
  for (int64_t r = 0; r < shown; ++r) {
    for (int c = 0; c < num_columns; ++c) {
      out.append(c == 0 ? " " : " | ");
      const std::string empty;
      const std::string& cell = r < static_cast<int64_t>(cells[c].size()) ? cells[c][r] : empty;
      AppendPadded(&out, cell, widths[c], right[c]);
    }
    // No trailing spaces after the last column.
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out.push_back('\n');
  }
  if (shown < total) out += fmt::format("… {} more rows\n", total - shown);
  out.append(footer);
  return out;
}

std::string FormatSchema(const Schema& schema) {
  std::string out;
  for (const FieldPtr& f : schema.fields()) {
    out += f->ToString();
    out.push_back('\n');
    for (const auto& [k, v] : f->metadata().entries()) {
      out += fmt::format("  -- {}: {}\n", k, v);
    }
  }
  if (!schema.metadata().empty()) {
    out.append("-- schema metadata --\n");
    for (const auto& [k, v] : schema.metadata().entries()) out += fmt::format("{}: {}\n", k, v);
  }
  return out;
}

}  // namespace strata

// Key index segments: building (collect, sort, encode, put) and loading (verify, search).
//
// Payload inside the "KIDX" envelope, little endian: u8 kind (0 integer, 1 string),
// u32 number of local fragments, u64 n entries; integer segments then hold n x i64 keys
// and n x u64 local addresses, string segments (n + 1) x u64 offsets, the key bytes and
// n x u64 local addresses. Entries are sorted by (key, address).
#include "table/key_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "strata/table.h"
#include "table/format.h"
#include "util/little_endian.h"

namespace strata::table {

bool IsPrimaryKeyType(const DataType& type) { return internal::KeyKindForType(type).ok(); }

}  // namespace strata::table

namespace strata::table::internal {
namespace {

constexpr size_t kHeaderBytes = 1 + 4 + 8;

uint32_t LocalFragment(LocalAddress address) { return static_cast<uint32_t>(address >> 32); }

// The 8 bytes of `key` from `skip` on as a big-endian number, zeros past its end: keys in
// byte order have these in the same (non-strict) order.
uint64_t PrefixAfter(std::string_view key, size_t skip) {
  if (key.size() >= skip + 8) {
    uint64_t word;
    std::memcpy(&word, key.data() + skip, 8);
    if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
    return word;
  }
  uint64_t prefix = 0;
  for (size_t i = 0; i < 8; ++i) {
    const size_t at = skip + i;
    prefix = (prefix << 8) | (at < key.size() ? static_cast<uint8_t>(key[at]) : 0u);
  }
  return prefix;
}

// Appends the integer keys of `keys` (already checked for nulls) as int64.
template <typename T>
void AddIntegers(const Array& keys, uint64_t base,
                 std::vector<std::pair<int64_t, LocalAddress>>* out) {
  const T* values = keys.values<T>();
  for (int64_t i = 0; i < keys.length(); ++i) {
    out->emplace_back(static_cast<int64_t>(values[i]), base + static_cast<uint64_t>(i));
  }
}

}  // namespace

Result<KeyKind> KeyKindForType(const DataType& type) {
  switch (type.id()) {
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kTimestamp:
      return KeyKind::kInteger;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      return KeyKind::kString;
    default:
      return Status::InvalidArgument(fmt::format(
          "type {} cannot be a primary key; expected utf8, large_utf8, an integer up to "
          "uint32/int64, or timestamp",
          type.ToString()));
  }
}

KeySegmentBuilder::KeySegmentBuilder(KeyKind kind) : kind_(kind) {}

Status KeySegmentBuilder::Add(uint32_t local_fragment, uint32_t first_offset, const Array& keys) {
  STRATA_ASSIGN_OR_RETURN(KeyKind kind, KeyKindForType(*keys.type()));
  if (kind != kind_) {
    return Status::InvalidArgument(fmt::format("key array of type {} does not match a {} index",
                                               keys.type()->ToString(),
                                               kind_ == KeyKind::kInteger ? "integer" : "string"));
  }
  if (uint64_t{first_offset} + static_cast<uint64_t>(keys.length()) > uint64_t{UINT32_MAX} + 1) {
    return Status::InvalidArgument(
        fmt::format("key rows [{}, {}) exceed the row offsets of a fragment", first_offset,
                    uint64_t{first_offset} + static_cast<uint64_t>(keys.length())));
  }
  if (keys.null_count() != 0) {
    for (int64_t i = 0; i < keys.length(); ++i) {
      if (keys.IsNull(i)) {
        return Status::InvalidArgument(
            fmt::format("primary key is null at row {}", uint64_t{first_offset} + i));
      }
    }
  }
  const uint64_t base = (uint64_t{local_fragment} << 32) | first_offset;
  switch (keys.type_id()) {
    case TypeId::kInt8:
      AddIntegers<int8_t>(keys, base, &integers_);
      break;
    case TypeId::kInt16:
      AddIntegers<int16_t>(keys, base, &integers_);
      break;
    case TypeId::kInt32:
      AddIntegers<int32_t>(keys, base, &integers_);
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      AddIntegers<int64_t>(keys, base, &integers_);
      break;
    case TypeId::kUInt8:
      AddIntegers<uint8_t>(keys, base, &integers_);
      break;
    case TypeId::kUInt16:
      AddIntegers<uint16_t>(keys, base, &integers_);
      break;
    case TypeId::kUInt32:
      AddIntegers<uint32_t>(keys, base, &integers_);
      break;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      for (int64_t i = 0; i < keys.length(); ++i) {
        strings_.emplace_back(std::string(keys.StringValue(i)), base + static_cast<uint64_t>(i));
      }
      break;
    default:
      break;  // rejected by KeyKindForType
  }
  return Status::OK();
}

void KeySegmentBuilder::AddInteger(int64_t key, LocalAddress address) {
  integers_.emplace_back(key, address);
}

void KeySegmentBuilder::AddString(std::string_view key, LocalAddress address) {
  strings_.emplace_back(std::string(key), address);
}

int64_t KeySegmentBuilder::num_entries() const {
  return static_cast<int64_t>(kind_ == KeyKind::kInteger ? integers_.size() : strings_.size());
}

Result<pb::KeySegment> KeySegmentBuilder::Finish(ObjectStore& store,
                                                 const std::string& table_prefix,
                                                 std::vector<uint32_t> fragment_ids, Clock* clock,
                                                 RandomSource* random) {
  const uint64_t n = static_cast<uint64_t>(num_entries());
  std::string payload;
  payload.push_back(static_cast<char>(kind_ == KeyKind::kInteger ? 0 : 1));
  PutFixed32(&payload, static_cast<uint32_t>(fragment_ids.size()));
  PutFixed64(&payload, n);
  auto check_address = [&](LocalAddress address) -> Status {
    if (LocalFragment(address) >= fragment_ids.size()) {
      return Status::InvalidArgument(
          fmt::format("key entry names local fragment {} but the segment covers {} fragments",
                      LocalFragment(address), fragment_ids.size()));
    }
    return Status::OK();
  };
  if (kind_ == KeyKind::kInteger) {
    std::sort(integers_.begin(), integers_.end());
    payload.reserve(payload.size() + n * 16);
    for (const auto& [key, address] : integers_) PutFixed64(&payload, static_cast<uint64_t>(key));
    for (const auto& [key, address] : integers_) {
      STRATA_RETURN_IF_ERROR(check_address(address));
      PutFixed64(&payload, address);
    }
  } else {
    std::sort(strings_.begin(), strings_.end());
    uint64_t offset = 0;
    PutFixed64(&payload, 0);
    for (const auto& [key, address] : strings_) {
      offset += key.size();
      PutFixed64(&payload, offset);
    }
    for (const auto& [key, address] : strings_) payload.append(key);
    for (const auto& [key, address] : strings_) {
      STRATA_RETURN_IF_ERROR(check_address(address));
      PutFixed64(&payload, address);
    }
  }
  const std::string bytes = EncodeEnvelope(kKeySegmentKind, payload);
  const std::string path = NewKeySegmentKey(clock, random);
  STRATA_RETURN_IF_ERROR(store.Put(table_prefix + path, bytes));
  pb::KeySegment entry;
  entry.set_path(path);
  for (uint32_t id : fragment_ids) entry.add_fragment_ids(id);
  entry.set_num_entries(static_cast<int64_t>(n));
  entry.set_size(static_cast<int64_t>(bytes.size()));
  return entry;
}

Result<std::shared_ptr<const KeySegment>> KeySegment::Load(ObjectStore& store,
                                                           const std::string& table_prefix,
                                                           const pb::KeySegment& entry) {
  const std::string& what = entry.path();
  STRATA_ASSIGN_OR_RETURN(Buffer object, store.Get(FileKey(table_prefix, entry.path())));
  if (object.size() != entry.size()) {
    return Status::Corruption(fmt::format("{}: size {} differs from the manifest's {}", what,
                                          object.size(), entry.size()));
  }
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kKeySegmentKind, object.view(), what));
  if (payload.size() < kHeaderBytes) {
    return Status::Corruption(
        fmt::format("{}: key segment payload of {} bytes is truncated", what, payload.size()));
  }
  const uint8_t kind_byte = static_cast<uint8_t>(payload[0]);
  if (kind_byte > 1) {
    return Status::Corruption(fmt::format("{}: unknown key kind {}", what, kind_byte));
  }
  const uint32_t num_fragments = DecodeFixed32(payload.data() + 1);
  const uint64_t n = DecodeFixed64(payload.data() + 5);
  if (num_fragments != static_cast<uint64_t>(entry.fragment_ids_size())) {
    return Status::Corruption(
        fmt::format("{}: segment covers {} fragments but the manifest lists {}", what,
                    num_fragments, entry.fragment_ids_size()));
  }
  if (n != static_cast<uint64_t>(entry.num_entries())) {
    return Status::Corruption(fmt::format("{}: segment holds {} entries but the manifest says {}",
                                          what, n, entry.num_entries()));
  }
  const size_t body = payload.size() - kHeaderBytes;
  // Every entry takes at least 16 bytes (key or offset, and address).
  if (n > body / 16) {
    return Status::Corruption(
        fmt::format("{}: {} entries do not fit in {} payload bytes", what, n, payload.size()));
  }
  auto segment = std::shared_ptr<KeySegment>(new KeySegment());
  segment->kind_ = kind_byte == 0 ? KeyKind::kInteger : KeyKind::kString;
  segment->fragment_ids_.assign(entry.fragment_ids().begin(), entry.fragment_ids().end());
  const char* p = payload.data() + kHeaderBytes;
  const size_t count = static_cast<size_t>(n);
  const char* addresses = nullptr;
  if (segment->kind_ == KeyKind::kInteger) {
    if (body != count * 16) {
      return Status::Corruption(fmt::format(
          "{}: integer segment of {} entries has {} payload bytes", what, n, payload.size()));
    }
    segment->integer_keys_.resize(count);
    for (size_t i = 0; i < count; ++i) {
      segment->integer_keys_[i] = static_cast<int64_t>(DecodeFixed64(p + 8 * i));
    }
    addresses = p + 8 * count;
  } else {
    if (body < (count + 1) * 8 + count * 8) {
      return Status::Corruption(fmt::format("{}: string segment of {} entries has {} payload bytes",
                                            what, n, payload.size()));
    }
    segment->string_offsets_.resize(count + 1);
    for (size_t i = 0; i <= count; ++i) {
      segment->string_offsets_[i] = DecodeFixed64(p + 8 * i);
      if (i == 0 ? segment->string_offsets_[0] != 0
                 : segment->string_offsets_[i] < segment->string_offsets_[i - 1]) {
        return Status::Corruption(fmt::format("{}: string offset {} is out of order", what, i));
      }
    }
    const uint64_t key_bytes = segment->string_offsets_[count];
    if (key_bytes != body - (count + 1) * 8 - count * 8) {
      return Status::Corruption(
          fmt::format("{}: string keys take {} bytes but the payload leaves {}", what, key_bytes,
                      body - (count + 1) * 8 - count * 8));
    }
    const char* bytes = p + (count + 1) * 8;
    segment->string_bytes_.assign(bytes, static_cast<size_t>(key_bytes));
    addresses = bytes + key_bytes;
  }
  segment->addresses_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const LocalAddress address = DecodeFixed64(addresses + 8 * i);
    if (LocalFragment(address) >= num_fragments) {
      return Status::Corruption(fmt::format("{}: entry {} names local fragment {} of {}", what, i,
                                            LocalFragment(address), num_fragments));
    }
    segment->addresses_[i] = address;
  }
  auto out_of_order = [&](size_t i) {
    return Status::Corruption(
        fmt::format("{}: entries {} and {} are out of order", what, i - 1, i));
  };
  if (segment->kind_ == KeyKind::kInteger) {
    for (size_t i = 1; i < count; ++i) {
      if (std::pair(segment->integer_keys_[i - 1], segment->addresses_[i - 1]) >
          std::pair(segment->integer_keys_[i], segment->addresses_[i])) {
        return out_of_order(i);
      }
    }
  } else if (count > 0) {
    // Sorted, the first and the last key share what every key shares. Each key is checked to
    // start so; then keys whose next 8 bytes differ are in the order of those bytes' numbers,
    // and only keys equal there are compared whole.
    const std::string_view first = segment->StringKey(0);
    const std::string_view last = segment->StringKey(static_cast<int64_t>(count) - 1);
    const size_t common =
        std::mismatch(first.begin(), first.begin() + std::min(first.size(), last.size()),
                      last.begin())
            .first -
        first.begin();
    segment->string_common_ = std::string(first.substr(0, common));
    segment->string_prefixes_.resize(count);
    for (size_t i = 0; i < count; ++i) {
      const std::string_view key = segment->StringKey(static_cast<int64_t>(i));
      if (!key.starts_with(segment->string_common_)) return out_of_order(i);  // i > 0
      segment->string_prefixes_[i] = PrefixAfter(key, common);
    }
    for (size_t i = 1; i < count; ++i) {
      const uint64_t before = segment->string_prefixes_[i - 1];
      const uint64_t after = segment->string_prefixes_[i];
      if (before < after) continue;
      const int64_t j = static_cast<int64_t>(i);
      if (before > after || std::pair(segment->StringKey(j - 1), segment->addresses_[i - 1]) >
                                std::pair(segment->StringKey(j), segment->addresses_[i])) {
        return out_of_order(i);
      }
    }
  }
  return std::shared_ptr<const KeySegment>(std::move(segment));
}

int64_t KeySegment::num_entries() const { return static_cast<int64_t>(addresses_.size()); }

int64_t KeySegment::IntegerKey(int64_t i) const { return integer_keys_[static_cast<size_t>(i)]; }

std::string_view KeySegment::StringKey(int64_t i) const {
  const size_t begin = static_cast<size_t>(string_offsets_[static_cast<size_t>(i)]);
  const size_t end = static_cast<size_t>(string_offsets_[static_cast<size_t>(i) + 1]);
  return std::string_view(string_bytes_).substr(begin, end - begin);
}

LocalAddress KeySegment::Address(int64_t i) const { return addresses_[static_cast<size_t>(i)]; }

int64_t KeySegment::memory_bytes() const {
  return static_cast<int64_t>(sizeof(KeySegment) + fragment_ids_.capacity() * sizeof(uint32_t) +
                              integer_keys_.capacity() * sizeof(int64_t) +
                              string_offsets_.capacity() * sizeof(uint64_t) +
                              string_bytes_.capacity() + string_common_.capacity() +
                              string_prefixes_.capacity() * sizeof(uint64_t) +
                              addresses_.capacity() * sizeof(LocalAddress));
}

void KeySegment::Lookup(const expr::Scalar& key, std::vector<uint64_t>* addresses) const {
  std::optional<expr::Scalar> normalized = NormalizeKey(key, kind_);
  if (!normalized) return;
  int64_t begin = 0;
  int64_t end = 0;
  if (kind_ == KeyKind::kInteger) {
    const int64_t k = normalized->int64_value();
    auto range = std::equal_range(integer_keys_.begin(), integer_keys_.end(), k);
    begin = range.first - integer_keys_.begin();
    end = range.second - integer_keys_.begin();
  } else {
    // Narrow by the 8 bytes after the common start (one array, few cache lines), then by
    // whole keys among the entries whose 8 bytes match.
    const std::string_view k = normalized->string_value();
    const std::string_view k_common = k.substr(0, string_common_.size());
    if (k_common != string_common_) return;  // every key starts otherwise
    const uint64_t k_prefix = PrefixAfter(k, string_common_.size());
    auto [first, last] =
        std::equal_range(string_prefixes_.begin(), string_prefixes_.end(), k_prefix);
    int64_t lo = first - string_prefixes_.begin();
    int64_t hi = last - string_prefixes_.begin();
    while (lo < hi) {  // first entry with key >= k
      const int64_t mid = lo + (hi - lo) / 2;
      if (StringKey(mid) < k) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    begin = lo;
    end = lo;
    const int64_t limit = last - string_prefixes_.begin();
    while (end < limit && StringKey(end) == k) ++end;
  }
  for (int64_t i = begin; i < end; ++i) {
    const LocalAddress local = addresses_[static_cast<size_t>(i)];
    addresses->push_back(
        MakeRowAddress(fragment_ids_[LocalFragment(local)], static_cast<uint32_t>(local)));
  }
}

std::optional<expr::Scalar> NormalizeKey(const expr::Scalar& key, KeyKind kind) {
  using Kind = expr::Scalar::Kind;
  if (kind == KeyKind::kString) {
    if (key.kind() == Kind::kString) return key;
    return std::nullopt;
  }
  switch (key.kind()) {
    case Kind::kInt64:
      return key;
    case Kind::kUInt64:
      if (key.uint64_value() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return expr::Scalar::Int64(static_cast<int64_t>(key.uint64_value()));
    case Kind::kTimestamp:
      return expr::Scalar::Int64(key.timestamp_micros());
    case Kind::kDouble: {
      const double d = key.double_value();
      // [-2^63, 2^63): both bounds are exact doubles; NaN fails every comparison.
      if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d) {
        return std::nullopt;
      }
      return expr::Scalar::Int64(static_cast<int64_t>(d));
    }
    default:
      return std::nullopt;
  }
}

}  // namespace strata::table::internal

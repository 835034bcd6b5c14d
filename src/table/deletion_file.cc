// Deletion vectors on CRoaring (0.2.66 C API) and the enveloped deletion files holding them.
#include "table/deletion_file.h"

#include <fmt/format.h>
#include <roaring/roaring.h>

#include <cstdlib>
#include <utility>

#include "table/format.h"

namespace strata::table::internal {
namespace {

roaring_bitmap_t* CreateOrDie() {
  roaring_bitmap_t* bitmap = roaring_bitmap_create();
  if (bitmap == nullptr) std::abort();  // out of memory
  return bitmap;
}

roaring_bitmap_t* CopyOrDie(const roaring_bitmap_t* bitmap) {
  roaring_bitmap_t* copy = roaring_bitmap_copy(bitmap);
  if (copy == nullptr) std::abort();  // out of memory
  return copy;
}

// Checks what roaring_bitmap_portable_deserialize_safe does not: containers that are sorted,
// free of duplicates and hold as many values as their headers claim.
bool StrictlyIncreasing(const roaring_bitmap_t* bitmap) {
  struct State {
    bool first = true;
    uint32_t previous = 0;
    uint64_t count = 0;
    bool ok = true;
  } state;
  roaring_iterate(
      bitmap,
      [](uint32_t value, void* arg) {
        State* s = static_cast<State*>(arg);
        if (!s->first && value <= s->previous) {
          s->ok = false;
          return false;
        }
        s->first = false;
        s->previous = value;
        ++s->count;
        return true;
      },
      &state);
  return state.ok && state.count == roaring_bitmap_get_cardinality(bitmap);
}

// Whether `bytes` start like a portable Roaring bitmap. Checked before deserializing because
// CRoaring prints a complaint to stdout for every input it rejects.
bool HasPortableCookie(std::string_view bytes) {
  constexpr uint32_t kCookieNoRuns = 12346;  // SERIAL_COOKIE_NO_RUNCONTAINER
  constexpr uint32_t kCookieRuns = 12347;    // SERIAL_COOKIE, in the low 16 bits
  if (bytes.size() < 8) return false;        // a cookie and a container count, at least
  uint32_t cookie = 0;
  for (int i = 3; i >= 0; --i) cookie = (cookie << 8) | static_cast<uint8_t>(bytes[i]);
  return cookie == kCookieNoRuns || (cookie & 0xFFFF) == kCookieRuns;
}

}  // namespace

DeletionVector::DeletionVector() : bitmap_(CreateOrDie()) {}

DeletionVector::~DeletionVector() {
  if (bitmap_ != nullptr) roaring_bitmap_free(bitmap_);
}

DeletionVector::DeletionVector(const DeletionVector& other) : bitmap_(CopyOrDie(other.bitmap_)) {}

DeletionVector& DeletionVector::operator=(const DeletionVector& other) {
  if (this != &other) {
    roaring_bitmap_t* copy = CopyOrDie(other.bitmap_);
    roaring_bitmap_free(bitmap_);
    bitmap_ = copy;
  }
  return *this;
}

// A moved-from vector stays usable: empty after construction, holding the target's old
// members after assignment.
DeletionVector::DeletionVector(DeletionVector&& other) noexcept : bitmap_(other.bitmap_) {
  other.bitmap_ = CreateOrDie();
}

DeletionVector& DeletionVector::operator=(DeletionVector&& other) noexcept {
  if (this != &other) std::swap(bitmap_, other.bitmap_);
  return *this;
}

void DeletionVector::Add(uint32_t offset) { roaring_bitmap_add(bitmap_, offset); }

void DeletionVector::AddRange(uint32_t begin, uint32_t end) {
  if (begin < end) roaring_bitmap_add_range_closed(bitmap_, begin, end - 1);
}

bool DeletionVector::Contains(uint32_t offset) const {
  return roaring_bitmap_contains(bitmap_, offset);
}

int64_t DeletionVector::Cardinality() const {
  return static_cast<int64_t>(roaring_bitmap_get_cardinality(bitmap_));
}

void DeletionVector::UnionWith(const DeletionVector& other) {
  if (this != &other) roaring_bitmap_or_inplace(bitmap_, other.bitmap_);
}

std::vector<uint32_t> DeletionVector::ToVector() const {
  std::vector<uint32_t> out(static_cast<size_t>(Cardinality()));
  if (!out.empty()) roaring_bitmap_to_uint32_array(bitmap_, out.data());
  return out;
}

int64_t DeletionVector::CountBelow(uint32_t end) const {
  if (end == 0) return 0;
  return static_cast<int64_t>(roaring_bitmap_rank(bitmap_, end - 1));
}

bool DeletionVector::Equals(const DeletionVector& other) const {
  return roaring_bitmap_equals(bitmap_, other.bitmap_);
}

uint32_t DeletionVector::Maximum() const { return roaring_bitmap_maximum(bitmap_); }

std::string DeletionVector::Serialize() const {
  std::string out(roaring_bitmap_portable_size_in_bytes(bitmap_), '\0');
  const size_t written = roaring_bitmap_portable_serialize(bitmap_, out.data());
  out.resize(written);
  return out;
}

Result<DeletionVector> DeletionVector::Deserialize(std::string_view bytes, std::string_view what) {
  roaring_bitmap_t* bitmap = HasPortableCookie(bytes) ? roaring_bitmap_portable_deserialize_safe(
                                                            bytes.data(), bytes.size())
                                                      : nullptr;
  if (bitmap == nullptr) {
    return Status::Corruption(
        fmt::format("{}: {} bytes are not a portable Roaring bitmap", what, bytes.size()));
  }
  DeletionVector out;
  roaring_bitmap_free(out.bitmap_);
  out.bitmap_ = bitmap;
  const size_t used = roaring_bitmap_portable_size_in_bytes(bitmap);
  if (used != bytes.size()) {
    return Status::Corruption(
        fmt::format("{}: the Roaring bitmap uses {} of its {} bytes", what, used, bytes.size()));
  }
  if (!StrictlyIncreasing(bitmap)) {
    return Status::Corruption(
        fmt::format("{}: the Roaring bitmap's containers are malformed", what));
  }
  return out;
}

Result<pb::DeletionFile> WriteDeletionFile(ObjectStore& store, const std::string& table_prefix,
                                           uint32_t fragment_id, uint64_t read_version,
                                           int64_t physical_rows, const DeletionVector& deleted,
                                           RandomSource* random) {
  if (deleted.empty()) {
    return Status::InvalidArgument(
        fmt::format("deletion file for fragment {} would be empty", fragment_id));
  }
  if (static_cast<int64_t>(deleted.Maximum()) >= physical_rows) {
    return Status::InvalidArgument(
        fmt::format("deletion vector of fragment {} deletes row {}, but it has {} rows",
                    fragment_id, deleted.Maximum(), physical_rows));
  }
  const std::string bytes = EncodeEnvelope(kDeletionKind, deleted.Serialize());
  pb::DeletionFile entry;
  entry.set_path(NewDeletionFileKey(fragment_id, read_version, random));
  entry.set_num_deleted(deleted.Cardinality());
  entry.set_size(static_cast<int64_t>(bytes.size()));
  STRATA_RETURN_IF_ERROR(
      store.Put(table_prefix + entry.path(), bytes)
          .WithContext(fmt::format("putting deletion file for fragment {}", fragment_id)));
  return entry;
}

Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& table_prefix,
                                        const pb::DeletionFile& entry, int64_t physical_rows) {
  const std::string key = FileKey(table_prefix, entry.path());
  Result<Buffer> bytes = store.Get(key);
  if (!bytes.ok()) return bytes.status().WithContext(fmt::format("reading deletion file {}", key));
  if (bytes->size() != entry.size()) {
    return Status::Corruption(
        fmt::format("deletion file {} has {} bytes, its manifest entry says {}", key, bytes->size(),
                    entry.size()));
  }
  STRATA_ASSIGN_OR_RETURN(std::string_view payload,
                          DecodeEnvelope(kDeletionKind, bytes->view(), key));
  STRATA_ASSIGN_OR_RETURN(DeletionVector deleted, DeletionVector::Deserialize(payload, key));
  if (deleted.Cardinality() != entry.num_deleted()) {
    return Status::Corruption(
        fmt::format("deletion file {} holds {} offsets, its manifest entry {}", key,
                    deleted.Cardinality(), entry.num_deleted()));
  }
  if (!deleted.empty()) {
    const int64_t maximum = deleted.Maximum();
    if (maximum >= physical_rows) {
      return Status::Corruption(
          fmt::format("deletion file {} deletes row {}, but the fragment has {} rows", key, maximum,
                      physical_rows));
    }
  }
  return deleted;
}

}  // namespace strata::table::internal

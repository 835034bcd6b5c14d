// What an Arrow IPC writer has sent of each dictionary, and what the next batch needs: in
// streams nothing, a delta or a replacement; in files (no replacements allowed) deltas into
// one growing dictionary per id, with the batch's indices remapped into it.
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <unordered_map>

#include "columnar/ipc_internal.h"
#include "strata/builder.h"

namespace strata::ipc::internal {

namespace {

// Lets the memo be searched by string_view without building a string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

}  // namespace

struct WriterDictionaries::State {
  bool sent_any = false;
  // Stream: the values the reader holds, and the last batch dictionary compared to them.
  Array sent;
  ArrayDataPtr last_checked;
  // File: the union of all values sent (value -> index), and the last batch dictionary
  // mapped into it with its mapping (null: identity).
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> memo;
  int64_t null_index = -1;
  int64_t unified_length = 0;
  ArrayDataPtr mapped_dictionary;
  std::shared_ptr<const std::vector<int64_t>> remap;
};

// The changes to one node's State that Commit() applies.
struct WriterDictionaries::Update {
  int node = 0;
  // Stream.
  Array sent;
  ArrayDataPtr last_checked;
  // File.
  std::vector<std::pair<std::string, int64_t>> fresh;
  int64_t null_index = -1;
  int64_t unified_length = 0;
  ArrayDataPtr mapped_dictionary;
  std::shared_ptr<const std::vector<int64_t>> remap;
};

namespace {

// True when the first n values of a and b (binary-like arrays) are equal, nulls included.
bool PrefixEqual(const Array& a, const Array& b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const bool a_null = a.IsNull(i);
    if (a_null != b.IsNull(i)) return false;
    if (!a_null && a.StringValue(i) != b.StringValue(i)) return false;
  }
  return true;
}

int64_t MaxIndex(const DataType& index_type) {
  const int bits = index_type.bit_width();
  if (bits >= 64) return std::numeric_limits<int64_t>::max();
  return index_type.is_signed_integer() ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
}

// The dictionary of every dictionary node of `data`, in plan order.
Status CollectDictionaries(const ArrayDataPtr& data, int* node,
                           std::vector<std::pair<int, ArrayDataPtr>>* out) {
  const int me = (*node)++;
  switch (data->type->id()) {
    case TypeId::kDictionary:
      if (data->dictionary == nullptr) {
        return Status::InvalidArgument("cannot write a dictionary array without a dictionary");
      }
      out->emplace_back(me, data->dictionary);
      return Status::OK();
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList:
    case TypeId::kStruct:
      if (data->children.size() != data->type->fields().size()) {
        return Status::InvalidArgument(fmt::format("cannot write {} array with {} children",
                                                   data->type->ToString(), data->children.size()));
      }
      for (const ArrayDataPtr& child : data->children) {
        STRATA_RETURN_IF_ERROR(CollectDictionaries(child, node, out));
      }
      return Status::OK();
    default:
      return Status::OK();
  }
}

}  // namespace

WriterDictionaries::WriterDictionaries(const LayoutPlan* plan, bool unify)
    : plan_(plan), unify_(unify) {}
WriterDictionaries::~WriterDictionaries() = default;

Result<WriterDictionaries::Prepared> WriterDictionaries::Prepare(const RecordBatch& batch) const {
  std::vector<std::pair<int, ArrayDataPtr>> found;
  int node = 0;
  for (const Array& column : batch.columns()) {
    STRATA_RETURN_IF_ERROR(CollectDictionaries(column.data(), &node, &found));
  }
  static const State kNothingSent;
  Prepared prepared;
  for (const auto& [node_index, dictionary_data] : found) {
    auto it = states_.find(node_index);
    const State& state = it != states_.end() ? *it->second : kNothingSent;
    const NodePlan& node_plan = plan_->nodes[node_index];
    const int64_t id = node_plan.dictionary_id;
    Array values(dictionary_data);
    auto update = std::make_shared<Update>();
    update->node = node_index;

    if (!unify_) {
      // Stream: nothing while the batch's values are a prefix of what the reader holds, a
      // delta when they extend it, a replacement otherwise.
      if (state.sent_any && dictionary_data == state.last_checked) continue;
      update->last_checked = dictionary_data;
      update->sent = values;
      if (!state.sent_any) {
        prepared.messages.push_back({id, values, false});
      } else {
        const int64_t held = state.sent.length();
        if (!PrefixEqual(values, state.sent, std::min(held, values.length()))) {
          prepared.messages.push_back({id, values, false});
        } else if (values.length() > held) {
          prepared.messages.push_back({id, values.Slice(held), true});
        } else {
          update->sent = state.sent;
        }
      }
      prepared.updates.push_back(std::move(update));
      continue;
    }

    // File: map every value of the batch's dictionary into the union of all values so far.
    if (state.sent_any && dictionary_data == state.mapped_dictionary) {
      if (state.remap != nullptr) prepared.remaps[node_index] = state.remap;
      continue;
    }
    const int64_t n = values.length();
    auto mapping = std::make_shared<std::vector<int64_t>>(n);
    std::unordered_map<std::string_view, int64_t> fresh;  // views into `values`
    std::vector<int64_t> added;
    int64_t null_index = state.null_index;
    int64_t next = state.unified_length;
    bool identity = true;
    for (int64_t j = 0; j < n; ++j) {
      int64_t index;
      if (values.IsNull(j)) {
        if (null_index < 0) {
          null_index = next++;
          added.push_back(j);
        }
        index = null_index;
      } else {
        const std::string_view value = values.StringValue(j);
        auto known = state.memo.find(value);
        if (known != state.memo.end()) {
          index = known->second;
        } else {
          auto [slot, inserted] = fresh.try_emplace(value, next);
          if (inserted) {
            ++next;
            added.push_back(j);
          }
          index = slot->second;
        }
      }
      (*mapping)[j] = index;
      identity = identity && index == j;
    }
    const DataType& index_type = *node_plan.type->index_type();
    if (next - 1 > MaxIndex(index_type)) {
      return Status::InvalidArgument(fmt::format(
          "dictionary {} of the file would hold {} distinct values across batches, more than "
          "its {} indices can address",
          id, next, index_type.ToString()));
    }
    if (!added.empty() || !state.sent_any) {
      Array delta;
      const auto count = static_cast<int64_t>(added.size());
      if (added.empty()) {
        delta = values;  // an empty first dictionary still announces the id
      } else if (added.front() == n - count && added.back() == n - 1) {
        delta = values.Slice(n - count);  // the new values are the batch's tail
      } else {
        STRATA_ASSIGN_OR_RETURN(delta, Take(values, added));
      }
      prepared.messages.push_back({id, delta, state.sent_any});
    }
    update->fresh.reserve(fresh.size());
    for (const auto& [value, index] : fresh) update->fresh.emplace_back(std::string(value), index);
    update->null_index = null_index;
    update->unified_length = next;
    update->mapped_dictionary = dictionary_data;
    if (!identity) {
      update->remap = mapping;
      prepared.remaps[node_index] = mapping;
    }
    prepared.updates.push_back(std::move(update));
  }
  return prepared;
}

void WriterDictionaries::Commit(const Prepared& prepared) {
  for (const std::shared_ptr<const Update>& update : prepared.updates) {
    std::unique_ptr<State>& state = states_[update->node];
    if (state == nullptr) state = std::make_unique<State>();
    state->sent_any = true;
    if (!unify_) {
      state->sent = update->sent;
      state->last_checked = update->last_checked;
      continue;
    }
    for (const auto& [value, index] : update->fresh) state->memo.emplace(value, index);
    state->null_index = update->null_index;
    state->unified_length = update->unified_length;
    state->mapped_dictionary = update->mapped_dictionary;
    state->remap = update->remap;
  }
}

Result<Buffer> DictionaryIndices(const WriterDictionaries::Prepared* prepared, int node,
                                 const Array& array) {
  const ArrayData& d = *array.data();
  const int64_t width = d.type->index_type()->bit_width() / 8;
  const int64_t need = (d.offset + d.length) * width;
  if (d.buffers.size() < 2 || d.buffers[1].size() < need) {
    return Status::InvalidArgument(fmt::format(
        "cannot write dictionary array: indices buffer has {} bytes, the layout needs {}",
        d.buffers.size() < 2 ? 0 : d.buffers[1].size(), need));
  }
  const std::vector<int64_t>* remap = nullptr;
  if (prepared != nullptr) {
    auto it = prepared->remaps.find(node);
    if (it != prepared->remaps.end()) remap = it->second.get();
  }
  if (remap == nullptr) return d.buffers[1].Slice(d.offset * width, d.length * width);
  BufferBuilder out;
  out.Resize(d.length * width);
  uint8_t* dst = out.mutable_data();
  for (int64_t i = 0; i < d.length; ++i) {
    int64_t mapped = 0;  // null slots: any valid index
    if (array.IsValid(i)) {
      const int64_t index = array.DictionaryIndex(i);
      if (index < 0 || index >= static_cast<int64_t>(remap->size())) {
        return Status::InvalidArgument(fmt::format(
            "cannot write dictionary array: index {} at row {} is outside its dictionary of {}",
            index, i, remap->size()));
      }
      mapped = (*remap)[index];
    }
    std::memcpy(dst + i * width, &mapped, width);  // little endian: the low bytes
  }
  return out.Finish();
}

}  // namespace strata::ipc::internal

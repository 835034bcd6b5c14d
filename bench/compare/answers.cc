// Answer digests (SHA-256 through OpenSSL), workload names, and the answers expected from the
// data set (definitions in engine.h).
#include "answers.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace strata::bench::compare {

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kIngest:
      return "W1 ingest";
    case Workload::kPuts:
      return "W2 puts";
    case Workload::kScan:
      return "W3 scan";
    case Workload::kLookup:
      return "W4 lookup";
    case Workload::kGetMany:
      return "W5 get_many";
    case Workload::kOverwrite:
      return "W6 overwrite";
    case Workload::kCompact:
      return "W7 compact";
    case Workload::kVector:
      return "W8 vector";
  }
  return "W? unknown";
}

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    return "sha256-failed";  // never equal to a real digest, so it shows as a mismatch
  }
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

namespace {

using RowIndex = std::unordered_map<std::string_view, size_t>;

RowIndex IndexRows(const std::vector<BenchRow>& rows) {
  RowIndex index;
  index.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) index.emplace(rows[i].id, i);
  return index;
}

// "id\tsequence_order\n" or "id\t-\n"; counts the ids found.
void AppendLookup(const RowIndex& index, const std::vector<BenchRow>& rows, const std::string& id,
                  std::string* lines, int64_t* found) {
  auto it = index.find(id);
  if (it == index.end()) {
    *lines += fmt::format("{}\t-\n", id);
  } else {
    *lines += fmt::format("{}\t{}\n", id, rows[it->second].sequence_order);
    ++*found;
  }
}

}  // namespace

Answer ExpectedScan(const Dataset& data) {
  std::vector<const BenchRow*> match;
  for (const BenchRow& r : data.rows) {
    if (r.policy_version == data.scan.policy_version && r.reward > data.scan.reward_gt) {
      match.push_back(&r);
    }
  }
  std::sort(match.begin(), match.end(),
            [](const BenchRow* a, const BenchRow* b) { return a->id < b->id; });
  std::string lines;
  for (const BenchRow* r : match) {
    lines += fmt::format("{}\t{}\t{}\n", r->id, r->sequence_order,
                         std::llround(static_cast<double>(r->reward) * 1024));
  }
  return Answer{static_cast<int64_t>(match.size()), Sha256Hex(lines)};
}

Answer ExpectedLookup(const Dataset& data) {
  const RowIndex index = IndexRows(data.rows);
  std::string lines;
  int64_t found = 0;
  for (const std::string& id : data.lookup_ids) AppendLookup(index, data.rows, id, &lines, &found);
  return Answer{found, Sha256Hex(lines)};
}

Answer ExpectedGetMany(const Dataset& data) {
  const RowIndex index = IndexRows(data.rows);
  std::string lines;
  int64_t found = 0;
  for (const auto& batch : data.get_many_ids) {
    for (const std::string& id : batch) AppendLookup(index, data.rows, id, &lines, &found);
  }
  return Answer{found, Sha256Hex(lines)};
}

Answer ExpectedOverwrite(const Dataset& data) {
  std::string lines;
  for (const BenchRow& r : data.overwrite_rows) {
    lines += fmt::format("{}\t{}\n", r.id, r.sequence_order);
  }
  return Answer{static_cast<int64_t>(data.overwrite_rows.size()), Sha256Hex(lines)};
}

Answer ExpectedVector(const Dataset& data) {
  const size_t dim = static_cast<size_t>(data.sizes.vector_dim);
  const size_t n = data.vector_ids.size();
  const size_t queries = dim == 0 ? 0 : data.queries.size() / dim;
  const size_t k = std::min(n, static_cast<size_t>(std::max(0, data.sizes.top_k)));
  std::string lines;
  std::vector<double> distance(n);
  std::vector<size_t> order(n);
  for (size_t q = 0; q < queries; ++q) {
    const float* query = &data.queries[q * dim];
    for (size_t i = 0; i < n; ++i) {
      const float* v = &data.vectors[i * dim];
      double sum = 0;
      for (size_t j = 0; j < dim; ++j) {
        const double d = static_cast<double>(v[j]) - static_cast<double>(query[j]);
        sum += d * d;
      }
      distance[i] = sum;
    }
    std::iota(order.begin(), order.end(), size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](size_t a, size_t b) {
                        return distance[a] != distance[b] ? distance[a] < distance[b] : a < b;
                      });
    lines += fmt::format("{}\t", q);
    for (size_t i = 0; i < k; ++i) {
      if (i > 0) lines += ',';
      lines += data.vector_ids[order[i]];
    }
    lines += '\n';
  }
  return Answer{static_cast<int64_t>(queries), Sha256Hex(lines)};
}

}  // namespace strata::bench::compare

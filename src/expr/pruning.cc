// CanMatch: what a predicate can evaluate to over a batch, from column statistics alone; and
// ExtractKeyEqualities: the key values a predicate restricts a column to.
//
// Every node is summarised by which results are possible for some row: TRUE, FALSE, NULL.
// Each flag is an over-approximation (set whenever some row might produce that result), so
// kNone (TRUE impossible) and kAll (FALSE and NULL impossible) are always sound. AND can be
// TRUE only if both sides can; FALSE if either can; NULL if one side can be NULL while the
// other can be TRUE or NULL. OR mirrors it; NOT swaps TRUE and FALSE. Rows are not correlated
// across columns, so the result is conservative, never wrong.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "expr/bound.h"
#include "expr/numeric.h"
#include "strata/expr.h"

namespace strata::expr {

using internal::BoundKind;
using internal::BoundNode;

namespace {

struct Possible {
  bool t = true;
  bool f = true;
  bool n = true;
};

constexpr Possible kUnknown{true, true, true};

// The smallest string above every string that starts with `prefix`, or nullopt if none exists
// (the prefix is all 0xFF bytes).
std::optional<std::string> PrefixSuccessor(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xFF) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

class Pruner {
 public:
  explicit Pruner(const StatisticsLookup& lookup) : lookup_(lookup) {}

  Possible Analyze(const BoundNode& node) {
    switch (node.kind) {
      case BoundKind::kConstant:
        if (node.literal.is_null()) return {false, false, true};
        return {node.literal.bool_value(), !node.literal.bool_value(), false};
      case BoundKind::kAnd:
      case BoundKind::kOr: {
        const bool is_and = node.kind == BoundKind::kAnd;
        Possible acc = Analyze(*node.children[0]);
        for (size_t c = 1; c < node.children.size(); ++c) {
          const Possible next = Analyze(*node.children[c]);
          // A NULL needs one side NULL and the other NULL or the non-deciding value.
          if (is_and) {
            acc = {acc.t && next.t, acc.f || next.f,
                   (acc.n && (next.t || next.n)) || (next.n && (acc.t || acc.n))};
          } else {
            acc = {acc.t || next.t, acc.f && next.f,
                   (acc.n && (next.f || next.n)) || (next.n && (acc.f || acc.n))};
          }
        }
        return acc;
      }
      case BoundKind::kNot: {
        const Possible inner = Analyze(*node.children[0]);
        return {inner.f, inner.t, inner.n};
      }
      default:
        return AnalyzeLeaf(node);
    }
  }

 private:
  Possible AnalyzeLeaf(const BoundNode& node) {
    // Struct fields and column pairs have no statistics of their own.
    if (!node.column.fields.empty() || node.kind == BoundKind::kCompareColumns) return kUnknown;
    const ColumnStatistics* stats = lookup_ ? lookup_(node.column.index) : nullptr;
    if (stats == nullptr) return kUnknown;
    const int64_t non_null = stats->row_count - stats->null_count;
    const bool any_null = stats->null_count > 0;
    if (stats->row_count <= 0) return {false, false, false};
    if (node.kind == BoundKind::kIsNull) return {any_null, non_null > 0, false};
    if (non_null <= 0) return {false, false, any_null};  // every other leaf is NULL on nulls
    Possible p = AnalyzeValues(node, *stats);
    p.n = p.n || any_null;
    return p;
  }

  // The possible results on the non-null rows; n is set only when non-null rows can be NULL.
  static Possible AnalyzeValues(const BoundNode& node, const ColumnStatistics& stats) {
    // c(x): literal x compared with min / max; nullopt when unknown or not comparable.
    auto vs_min = [&](const Scalar& x) -> std::optional<int> {
      return stats.min.has_value() ? CompareScalars(*stats.min, x) : std::nullopt;
    };
    auto vs_max = [&](const Scalar& x) -> std::optional<int> {
      return stats.max.has_value() ? CompareScalars(*stats.max, x) : std::nullopt;
    };
    // All values equal x (min == max == x), and no value equal to x (x outside [min, max]).
    auto all_equal = [&](const Scalar& x) { return vs_min(x) == 0 && vs_max(x) == 0; };
    auto none_equal = [&](const Scalar& x) {
      const auto lo = vs_min(x);
      const auto hi = vs_max(x);
      return (lo.has_value() && *lo > 0) || (hi.has_value() && *hi < 0);
    };
    switch (node.kind) {
      case BoundKind::kColumnConstant:
        return {node.literal.bool_value(), !node.literal.bool_value(), false};
      case BoundKind::kBoolColumn: {
        const Scalar yes = Scalar::Bool(true);
        return {!none_equal(yes), !all_equal(yes), false};
      }
      case BoundKind::kCompare: {
        const Scalar& x = node.literal;
        const auto lo = vs_min(x);
        const auto hi = vs_max(x);
        // "Some value is < x" is impossible when min >= x, and so on.
        const bool min_ge = lo.has_value() && *lo >= 0;
        const bool min_gt = lo.has_value() && *lo > 0;
        const bool max_le = hi.has_value() && *hi <= 0;
        const bool max_lt = hi.has_value() && *hi < 0;
        switch (node.op) {
          case CompareOp::kEq:
            return {!none_equal(x), !all_equal(x), false};
          case CompareOp::kNe:
            return {!all_equal(x), !none_equal(x), false};
          case CompareOp::kLt:
            return {!min_ge, !max_lt, false};
          case CompareOp::kLe:
            return {!min_gt, !max_le, false};
          case CompareOp::kGt:
            return {!max_le, !min_gt, false};
          case CompareOp::kGe:
            return {!max_lt, !min_ge, false};
        }
        return kUnknown;
      }
      case BoundKind::kIn: {
        bool t = false;
        for (const Scalar& x : node.values) t = t || !none_equal(x);
        bool f = true;
        for (const Scalar& x : node.values) f = f && !all_equal(x);
        // With a NULL in the list, FALSE becomes NULL.
        if (node.values_have_null) return {t, false, f};
        return {t, f, false};
      }
      case BoundKind::kLike: {
        const internal::LikePattern& pattern = *node.like;
        if (pattern.is_exact()) {
          const Scalar x = Scalar::String(pattern.prefix());
          return {!none_equal(x), !all_equal(x), false};
        }
        if (pattern.prefix().empty()) return {true, !pattern.is_prefix(), false};
        // Matches start with the prefix P, i.e. lie in [P, successor(P)).
        const Scalar low = Scalar::String(pattern.prefix());
        const std::optional<std::string> successor = PrefixSuccessor(pattern.prefix());
        const auto hi_vs_low = vs_max(low);
        const bool all_below = hi_vs_low.has_value() && *hi_vs_low < 0;
        bool all_above = false;
        bool min_in_range = false;
        const auto lo_vs_low = vs_min(low);
        if (successor.has_value()) {
          const Scalar high = Scalar::String(*successor);
          const auto lo_vs_high = vs_min(high);
          const auto hi_vs_high = vs_max(high);
          all_above = lo_vs_high.has_value() && *lo_vs_high >= 0;
          min_in_range =
              lo_vs_low.has_value() && *lo_vs_low >= 0 && hi_vs_high.has_value() && *hi_vs_high < 0;
        } else {
          min_in_range = lo_vs_low.has_value() && *lo_vs_low >= 0;
        }
        const bool t = !all_below && !all_above;
        // Every value starts with P: a pure 'P%' pattern matches them all.
        const bool f = !(pattern.is_prefix() && min_in_range);
        return {t, f, false};
      }
      default:  // array_has: elements have no statistics
        return {true, true, false};
    }
  }

  const StatisticsLookup& lookup_;
};

bool ScalarLess(const Scalar& a, const Scalar& b) { return CompareScalars(a, b).value_or(0) < 0; }
bool ScalarEqual(const Scalar& a, const Scalar& b) { return CompareScalars(a, b) == 0; }

void SortDistinct(std::vector<Scalar>* values) {
  std::sort(values->begin(), values->end(), ScalarLess);
  values->erase(std::unique(values->begin(), values->end(), ScalarEqual), values->end());
}

std::optional<std::vector<Scalar>> ExtractKeys(const BoundNode& node, int key) {
  const bool on_key = node.column.index == key && node.column.fields.empty();
  switch (node.kind) {
    case BoundKind::kConstant:
      // FALSE or NULL everywhere: no row matches.
      if (node.literal.is_null() || !node.literal.bool_value()) return std::vector<Scalar>();
      return std::nullopt;
    case BoundKind::kColumnConstant:
      if (on_key && !node.literal.bool_value()) return std::vector<Scalar>();
      return std::nullopt;
    case BoundKind::kCompare:
      if (on_key && node.op == CompareOp::kEq) return std::vector<Scalar>{node.literal};
      return std::nullopt;
    case BoundKind::kIn:
      if (on_key) return node.values;
      return std::nullopt;
    case BoundKind::kAnd: {
      std::optional<std::vector<Scalar>> keys;
      for (const auto& child : node.children) {
        std::optional<std::vector<Scalar>> next = ExtractKeys(*child, key);
        if (!next.has_value()) continue;
        SortDistinct(&*next);
        if (!keys.has_value()) {
          keys = std::move(next);
          continue;
        }
        std::vector<Scalar> both;
        std::set_intersection(keys->begin(), keys->end(), next->begin(), next->end(),
                              std::back_inserter(both), ScalarLess);
        keys = std::move(both);
      }
      return keys;
    }
    case BoundKind::kOr: {
      std::vector<Scalar> all;
      for (const auto& child : node.children) {
        std::optional<std::vector<Scalar>> next = ExtractKeys(*child, key);
        if (!next.has_value()) return std::nullopt;
        all.insert(all.end(), next->begin(), next->end());
      }
      return all;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

PruneResult CanMatch(const BoundExpr& expr, const StatisticsLookup& statistics) {
  const Possible p = Pruner(statistics).Analyze(expr.root());
  if (!p.t) return PruneResult::kNone;
  if (!p.f && !p.n) return PruneResult::kAll;
  return PruneResult::kMaybe;
}

std::optional<std::vector<Scalar>> ExtractKeyEqualities(const BoundExpr& expr, int key_column) {
  std::optional<std::vector<Scalar>> keys = ExtractKeys(expr.root(), key_column);
  if (keys.has_value()) SortDistinct(&*keys);
  return keys;
}

}  // namespace strata::expr

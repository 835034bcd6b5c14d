// Pushdown: which constraints SQLite offers the `records` table become a strata filter term or
// a key lookup, and the term's text.
//
// The rule every function here keeps: a pushed term is TRUE for every row on which SQLite's
// constraint is TRUE, as SQLite evaluates it over the values the table shows (column_values.h)
// — exactly equivalent where the two languages agree, a superset where they do not (SQLite
// checks every row again: the table never sets `omit`). Where no such term exists nothing is
// pushed. The cases that need care, each pinned by a test:
//   - integers: literals outside the column type's range are not pushed (strata refuses them);
//     uint64 columns (REAL past INT64_MAX in SQLite) push only IS [NOT] NULL;
//   - float32: SQLite sees w(v), the shortest decimal of v read as a double. Rounding to
//     float32 is monotone and returns v from w(v), so w(v) op d implies v op' (float)d with <
//     and > widened to <= and >=: `v <= (float)d` etc.; != is not pushed;
//   - NaN reads as NULL in SQLite but as a number above every other in strata: IS NULL is not
//     pushed on float columns;
//   - integer literals compared with float64 columns are pushed only within +-2^53 (strata
//     rounds them to a double; SQLite compares exactly);
//   - text compares bytewise in both (only the BINARY collation is pushed); TEXT literals only,
//     for string and timestamp columns; numbers against text (and text against numbers) are
//     never pushed, since SQLite's affinity rules convert them;
//   - timestamps show as RFC 3339 text, which orders as time for years 0000-9999; text equal to
//     the canonical form (or a 'YYYY-MM-DD' / 'YYYY-MM-DDTHH:MM:SS' prefix of it, for ranges) is
//     pushed as a timestamp, with `OR col > <9999-12-31T23:59:59.999999Z>` for < and <= (years
//     past 9999 show as "+10000-...", which sorts before every canonical text);
//   - LIKE is case-insensitive for ASCII letters in SQLite and not in strata: only patterns
//     without ASCII letters are pushed; GLOB patterns without '[' are translated exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/expr.h"
#include "strata/sql.h"
#include "strata/type.h"

namespace strata::sql {

// The constraint operators the table takes (SQLite's SQLITE_INDEX_CONSTRAINT_* it handles).
enum class ConstraintOp { kEq, kNe, kLt, kLe, kGt, kGe, kIsNull, kIsNotNull, kLike, kGlob, kIn };

// Whether the operator has a right-hand value (all but IS [NOT] NULL).
bool HasOperand(ConstraintOp op);
// "=", "IN", "IS NULL", ... for plans and messages.
std::string_view ConstraintOpName(ConstraintOp op);

// Whether some value could make `column op value` pushable: xBestIndex asks before any value is
// known, so that constraints that are never pushed are not requested.
bool MayPush(const Field& column, ConstraintOp op);

// A pushed term.
struct PushedTerm {
  // The filter term (expression language); empty when `never_true`.
  std::string text;
  // SQLite's constraint is TRUE for no row (a comparison with NULL, an empty IN list): the
  // scan can be skipped.
  bool never_true = false;
};

// The term for `column op value` (op is not kIn), or nullopt when nothing may be pushed.
std::optional<PushedTerm> PushTerm(const Field& column, ConstraintOp op, const Value& value);
// The term for `column IN (values)`; nullopt when one value cannot be pushed as an equality.
std::optional<PushedTerm> PushIn(const Field& column, const std::vector<Value>& values);

// The key for StorageBase::GetMany that `key_column = value` looks up, when that equality
// means exactly "the row with this key": a TEXT value for a string key, an INTEGER in range
// for an integer key, canonical RFC 3339 text for a timestamp key. nullopt otherwise (and for
// NULL, which matches no key).
std::optional<expr::Scalar> KeyForLookup(const Field& key_column, const Value& value);

// `name` quoted for the expression language: "name" with '"' doubled.
std::string QuoteColumn(std::string_view name);

}  // namespace strata::sql

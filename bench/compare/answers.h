// The answers the driver expects, computed from the data set itself (definitions in
// engine.h): every engine's answer is compared with these as well as with each other's, so
// a run with one engine still checks it.
#pragma once

#include "dataset.h"
#include "engine.h"

namespace strata::bench::compare {

// W3; W3m after W7 with `overwritten` when W6 ran before it (its rows replace their ids').
Answer ExpectedScan(const Dataset& data, bool overwritten = false);
Answer ExpectedLookup(const Dataset& data);     // W4
Answer ExpectedGetMany(const Dataset& data);    // W5
Answer ExpectedOverwrite(const Dataset& data);  // W6 (count; total_rows = sizes.rows)
Answer ExpectedVector(const Dataset& data);     // W8 (exact L2 in double precision)
// W10: data.sql's two GROUP BY queries (Q1 per policy_version and role, Q2 per role over
// reward > 0.5), aggregated here from data.rows; tied to the query texts of SqlSpec.
Answer ExpectedSql(const Dataset& data);

// W9's reference, per query the top_k ids of an exact hybrid retrieval over the records of
// the query's topic (the candidates): a vector channel ranking every candidate by L2
// distance (double precision), a text channel ranking the candidates sharing a token with
// the query by BM25 (k1 = 1.2, b = 0.75; tokens = runs of ASCII letters and digits,
// lowercased; the query's distinct tokens; N, df and the average length over the
// candidates), both ties by id, fused by reciprocal rank (1 / (60 + rank) per channel) and
// ordered by fused score desc, distance asc, text score desc, id. This is strata's Retrieve
// definition (context_store.h), computed here independently.
std::vector<std::vector<std::string>> ExpectedHybrid(const Dataset& data);
// Recall of `got` against `reference` and ids outside each query's filter.
HybridQuality CheckHybrid(const Dataset& data,
                          const std::vector<std::vector<std::string>>& reference,
                          const std::vector<std::vector<std::string>>& got);

}  // namespace strata::bench::compare

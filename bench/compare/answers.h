// The answers the driver expects, computed from the data set itself (definitions in
// engine.h): every engine's answer is compared with these as well as with each other's, so
// a run with one engine still checks it.
#pragma once

#include "dataset.h"
#include "engine.h"

namespace strata::bench::compare {

Answer ExpectedScan(const Dataset& data);       // W3
Answer ExpectedLookup(const Dataset& data);     // W4
Answer ExpectedGetMany(const Dataset& data);    // W5
Answer ExpectedOverwrite(const Dataset& data);  // W6 (count; total_rows = sizes.rows)
Answer ExpectedVector(const Dataset& data);     // W8 (exact L2 in double precision)

}  // namespace strata::bench::compare

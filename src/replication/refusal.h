// The error of a refusal (include/strata/replication.h): "refused (<Kind>): <message>" with
// a status code per kind.
#pragma once

#include <string_view>

#include "strata/replication.h"
#include "strata/status.h"

namespace strata::replication::internal {

Status MakeRefusal(Refusal refusal, std::string_view message);

}  // namespace strata::replication::internal

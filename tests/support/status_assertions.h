// GoogleTest assertions for Status and Result<T>: the failure message names the expression
// and the status it produced.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "strata/status.h"

// ASSERT_OK(status_expr)
#define ASSERT_OK(expr)                            \
  do {                                             \
    const ::strata::Status st_ = (expr);           \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_; \
  } while (0)

// ASSERT_OK_AND_ASSIGN(auto x, result_expr): asserts the result is OK and moves its value.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  STRATA_ASSERT_OK_AND_ASSIGN_IMPL_(STRATA_CONCAT_(strata_test_result_, __LINE__), lhs, rexpr)
#define STRATA_ASSERT_OK_AND_ASSIGN_IMPL_(result, lhs, rexpr)    \
  auto result = (rexpr);                                         \
  ASSERT_TRUE(result.ok()) << #rexpr << ": " << result.status(); \
  lhs = std::move(result).value()

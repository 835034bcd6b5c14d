// The exact-search distance kernel: one query against many float32 vectors laid out one after
// another (a FixedSizeList<float32> child buffer), with SIMD chosen at run time (Highway
// dynamic dispatch: AVX-512, AVX2, SSE4 or scalar).
#pragma once

#include <cstddef>
#include <span>

#include "strata/context_store.h"

namespace strata::store {

// out[r] = Distance(metric, query, vectors[r * dim, (r + 1) * dim)) for r < rows, where
// dim = query.size(): the same formulas (float inputs widened to double, sums in double), so
// a result differs from Distance()'s only by the order of the additions. A NaN or an infinity
// in either vector propagates as it does there (cosine with a zero-norm query is 1.0 whatever
// the vector holds). `vectors` needs no alignment. REQUIRES out has `rows` elements.
void VectorDistances(DistanceMetric metric, std::span<const float> query, const float* vectors,
                     size_t rows, double* out);

// The widest instruction set the kernel dispatches to on this machine ("AVX2", ...), for
// benchmark notes.
const char* VectorKernelTarget();

}  // namespace strata::store

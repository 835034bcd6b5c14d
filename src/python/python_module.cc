// strata._strata: the compiled part of the `strata` Python package (python/strata/), a thin
// layer over the public C++ API (include/strata). Every call that does I/O releases the GIL.
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/py_values.h"

namespace py = pybind11;

PYBIND11_MODULE(_strata, m) {
  using namespace strata::python;  // NOLINT(google-build-using-namespace): a .cc, one scope
  m.doc() = "strata's compiled core; use the `strata` package, which wraps it.";
  m.attr("__version__") = STRATA_VERSION;
  InitValues();
  RegisterErrorTranslator(m);
  BindRolloutStore(m);
  BindGenericStore(m);
  BindContextStore(m);
  BindArrow(m);
  BindReplication(m);
  BindDatagenStore(m);

  // Tests read these to prove that calls from several threads ran in C++ at the same time.
  m.def("_gil_free_stats", [] {
    GilFreeStats& stats = GilFreeCounters();
    py::dict out;
    out["running"] = stats.running.load();
    out["peak"] = stats.peak.load();
    out["entered"] = stats.entered.load();
    return out;
  });
  m.def("_reset_gil_free_stats", [] {
    GilFreeStats& stats = GilFreeCounters();
    stats.peak.store(stats.running.load());
    stats.entered.store(0);
  });
}

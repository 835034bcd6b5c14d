// The classes and functions of strata._strata, one Bind* per file; python_module.cc calls
// them. The public Python API (python/strata/) wraps these handles.
#pragma once

#include <pybind11/pybind11.h>

namespace strata::python {

void BindRolloutStore(pybind11::module_& module);
void BindGenericStore(pybind11::module_& module);
void BindContextStore(pybind11::module_& module);
void BindArrow(pybind11::module_& module);
void BindReplication(pybind11::module_& module);
void BindDatagenStore(pybind11::module_& module);

}  // namespace strata::python

# Finds the Debian 12 packages strata builds against (installed by scripts/setup).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
pkg_check_modules(HWY REQUIRED IMPORTED_TARGET libhwy)
# libfaiss-dev (the context store's IVF vector index) ships a static library and no CMake or
# pkg-config file: it needs OpenMP (GCC's libgomp, or libomp-dev for the clang presets), BLAS
# and LAPACK linked after it.
find_path(FAISS_INCLUDE_DIR faiss/IndexIVFFlat.h REQUIRED)
find_library(FAISS_LIBRARY faiss REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
add_library(strata_faiss INTERFACE)
target_include_directories(strata_faiss SYSTEM INTERFACE ${FAISS_INCLUDE_DIR})
target_link_libraries(strata_faiss INTERFACE ${FAISS_LIBRARY} OpenMP::OpenMP_CXX
                      ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES})
find_package(zstd CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(Threads REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(FlatBuffers CONFIG REQUIRED)
find_program(FLATC flatc REQUIRED)
find_package(Protobuf REQUIRED)
find_package(roaring CONFIG REQUIRED)
# Boost.Beast and Boost.Asio (libboost-dev, header-only in 1.74): the HTTP server.
find_package(Boost 1.74 REQUIRED)
# SQLite (libsqlite3-dev): SQL over stores through virtual tables (src/sql).
find_package(SQLite3 REQUIRED)
# simdjson (libsimdjson-dev): the server's fast path for rollout upload bodies.
find_package(simdjson CONFIG REQUIRED)
# tcmalloc (libgoogle-perftools-dev, the minimal library without the profiler): the allocator
# of the `strata` executable (strata_use_tcmalloc). Sanitizer and fuzz builds keep their own
# allocator.
if(NOT STRATA_SANITIZE AND NOT STRATA_BUILD_FUZZ)
  find_library(STRATA_TCMALLOC_LIBRARY tcmalloc_minimal)
  if(NOT STRATA_TCMALLOC_LIBRARY)
    message(FATAL_ERROR "libtcmalloc_minimal not found: run scripts/setup (libgoogle-perftools-dev)")
  endif()
endif()
# The Python module (src/python, python/): pybind11 (pybind11-dev) against Debian's
# interpreter, named explicitly so that another python3 earlier on PATH (a pyenv shim, a
# virtualenv) is never picked up; numpy (python3-numpy) is needed only at run time.
if(STRATA_BUILD_PYTHON OR STRATA_BUILD_TESTS)
  set(STRATA_PYTHON3 /usr/bin/python3 CACHE FILEPATH "The Python interpreter strata builds for")
endif()
if(STRATA_BUILD_PYTHON)
  set(Python_EXECUTABLE ${STRATA_PYTHON3})
  find_package(Python 3.11 REQUIRED COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.10 CONFIG REQUIRED)
endif()
if(STRATA_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
if(STRATA_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()

# Compiler flags and the helpers that declare one library per layer, tests and tools.

set(STRATA_WARNINGS -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(STRATA_WERROR)
  list(APPEND STRATA_WARNINGS -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # g++ 12 at -O3 reports -Wrestrict on plain std::string assignments (GCC bug 105329).
  list(APPEND STRATA_WARNINGS -Wno-restrict)
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  list(APPEND STRATA_WARNINGS -Wthread-safety)
endif()

if(STRATA_SANITIZE)
  string(REPLACE ";" "," _san "${STRATA_SANITIZE}")
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_san})
endif()
if(STRATA_BUILD_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Include boundaries. Headers are included as "<layer>/foo.h", but src/ itself is on no
# include path. Each layer's views are symlinks under <build>/layers/<layer>/:
#   private/<layer>        -> src/<layer>: the whole layer, for its own sources and tests;
#   exported/<layer>/*.h   -> the headers listed in EXPORTED_HEADERS: for the libraries and
#                             tests of the layers above it (and their GENERATED headers);
#   test-exported/<layer>/*.h -> TEST_EXPORTED_HEADERS: for the tests above it only.
# The CLI, benchmarks, examples and fuzzers see include/strata only. Including anything
# else fails to compile ("lsm/wal_internal.h: No such file or directory"); the probes in
# tests/layering check that it does.
set(STRATA_LAYER_VIEWS ${CMAKE_BINARY_DIR}/layers)

# strata_library(NAME <layer> DEPS <targets...> [PRIVATE_DEPS <targets...>]
#                [EXPORTED_HEADERS <layer>/a.h ...] [TEST_EXPORTED_HEADERS <layer>/b.h ...]
#                [GENERATED <targets...>] [PUBLIC_API_ONLY])
# Builds every *.cc in the current folder except tests, fuzzers and mains into strata_<layer>.
# DEPS are the lower layers (strata::<layer>) and other libraries the layer's public headers
# need. GENERATED are libraries of generated code (protobuf) whose headers the layer uses and,
# with its EXPORTED_HEADERS, the layers above it. An exported header must only include
# headers of its own layer that are exported too (checked here). PUBLIC_API_ONLY makes an upper
# layer (server, sql) that sees include/strata and its own folder only, as the CLI does: no
# header a lower layer exports to the layers above it.
function(strata_library)
  cmake_parse_arguments(ARG "PUBLIC_API_ONLY"
    "NAME" "DEPS;PRIVATE_DEPS;EXTRA_SOURCES;EXPORTED_HEADERS;TEST_EXPORTED_HEADERS;GENERATED"
    ${ARGN})
  set(_layer ${ARG_NAME})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER _srcs EXCLUDE REGEX "(_test|_fuzz|_main)\\.cc$")
  add_library(strata_${_layer} STATIC ${_srcs} ${ARG_EXTRA_SOURCES})
  add_library(strata::${_layer} ALIAS strata_${_layer})

  # The lower layers this one may see into: its strata DEPS and everything they may see.
  set(_lower "")
  foreach(_dep IN LISTS ARG_DEPS)
    if(ARG_PUBLIC_API_ONLY)
      break()
    endif()
    if(_dep MATCHES "^strata(::|_)([a-z]+)$")
      get_property(_known GLOBAL PROPERTY STRATA_LAYER_LOWER_${CMAKE_MATCH_2} SET)
      if(_known)
        get_property(_dep_lower GLOBAL PROPERTY STRATA_LAYER_LOWER_${CMAKE_MATCH_2})
        list(APPEND _lower ${CMAKE_MATCH_2} ${_dep_lower})
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _lower)
  set_property(GLOBAL PROPERTY STRATA_LAYER_LOWER_${_layer} "${_lower}")

  set(_views ${STRATA_LAYER_VIEWS}/${_layer})
  file(MAKE_DIRECTORY ${_views}/private)
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${_views}/private/${_layer} SYMBOLIC)
  _strata_export_headers(${_layer} exported "${ARG_EXPORTED_HEADERS}" "")
  _strata_export_headers(${_layer} test-exported "${ARG_TEST_EXPORTED_HEADERS}"
    "${ARG_EXPORTED_HEADERS}")

  add_library(strata_${_layer}_exported_headers INTERFACE)
  target_include_directories(strata_${_layer}_exported_headers INTERFACE ${_views}/exported)
  target_link_libraries(strata_${_layer}_exported_headers INTERFACE ${ARG_GENERATED})
  add_library(strata_${_layer}_test_exported_headers INTERFACE)
  target_include_directories(strata_${_layer}_test_exported_headers
    INTERFACE ${_views}/test-exported)

  # What the layer's own sources and tests see.
  add_library(strata_${_layer}_internal_headers INTERFACE)
  target_include_directories(strata_${_layer}_internal_headers INTERFACE ${_views}/private)
  target_link_libraries(strata_${_layer}_internal_headers INTERFACE ${ARG_GENERATED})
  foreach(_l IN LISTS _lower)
    target_link_libraries(strata_${_layer}_internal_headers INTERFACE
      strata_${_l}_exported_headers)
  endforeach()

  target_include_directories(strata_${_layer} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(strata_${_layer} PRIVATE ${STRATA_WARNINGS})
  # PRIVATE: a static library's private dependencies are still linked into its users, but
  # their include directories do not reach them.
  target_link_libraries(strata_${_layer} PUBLIC ${ARG_DEPS}
    PRIVATE ${ARG_PRIVATE_DEPS} strata_${_layer}_internal_headers)
  strata_layer_tests(${_layer})
endfunction()

# Materialises <build>/layers/<layer>/<kind>/<layer>/<header> as symlinks to src/<layer>/.
# `also_visible` are headers an entry may include besides the ones in `headers`.
function(_strata_export_headers layer kind headers also_visible)
  set(_dir ${STRATA_LAYER_VIEWS}/${layer}/${kind})
  file(REMOVE_RECURSE ${_dir})
  file(MAKE_DIRECTORY ${_dir}/${layer})
  foreach(_h IN LISTS headers)
    if(NOT _h MATCHES "^${layer}/[^/]+\\.h$")
      message(FATAL_ERROR "strata_library(${layer}): '${_h}' is not a header of the layer "
        "(write ${layer}/<file>.h)")
    endif()
    set(_src ${PROJECT_SOURCE_DIR}/src/${_h})
    if(NOT EXISTS ${_src})
      message(FATAL_ERROR "strata_library(${layer}): exported header ${_h} does not exist")
    endif()
    # An exported header that includes an unexported one of its layer would fail to compile
    # in every user; say so here instead.
    file(STRINGS ${_src} _includes REGEX "^#include \"${layer}/")
    foreach(_line IN LISTS _includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" _inc "${_line}")
      if(NOT _inc MATCHES "(\\.pb\\.h|_generated\\.h)$" AND NOT _inc IN_LIST headers
          AND NOT _inc IN_LIST also_visible)
        message(FATAL_ERROR "strata_library(${layer}): ${_h} is exported but includes ${_inc}, "
          "which is not; export it too")
      endif()
    endforeach()
    file(CREATE_LINK ${_src} ${_dir}/${_h} SYMBOLIC)
  endforeach()
endfunction()

# strata_test_headers(<target> [PUBLIC] <layer>...): lets a test target or test helper
# outside src/ include what <layer> and the layers below it export to tests (EXPORTED_HEADERS
# and TEST_EXPORTED_HEADERS). PUBLIC passes that on to the target's users (a test library).
function(strata_test_headers target)
  set(_scope PRIVATE)
  set(_layers ${ARGN})
  if(_layers AND "${ARGV1}" STREQUAL "PUBLIC")
    set(_scope PUBLIC)
    list(REMOVE_AT _layers 0)
  endif()
  foreach(_l IN LISTS _layers)
    get_property(_lower GLOBAL PROPERTY STRATA_LAYER_LOWER_${_l})
    foreach(_v IN LISTS _l _lower)
      target_link_libraries(${target} ${_scope} strata_${_v}_exported_headers
        strata_${_v}_test_exported_headers)
    endforeach()
  endforeach()
endfunction()

# Every *_test.cc beside a layer's code becomes one test binary per layer.
function(strata_layer_tests layer)
  if(NOT STRATA_BUILD_TESTS)
    return()
  endif()
  file(GLOB _tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(NOT _tests)
    return()
  endif()
  add_executable(${layer}_test ${_tests})
  target_compile_options(${layer}_test PRIVATE ${STRATA_WARNINGS})
  target_link_libraries(${layer}_test PRIVATE strata_${layer} strata_${layer}_internal_headers
    strata_testing GTest::gmock_main nlohmann_json::nlohmann_json)
  # The tests also see what the lower layers export to tests only (test doubles, helpers).
  get_property(_lower GLOBAL PROPERTY STRATA_LAYER_LOWER_${layer})
  foreach(_l IN LISTS _lower)
    target_link_libraries(${layer}_test PRIVATE strata_${_l}_test_exported_headers)
  endforeach()
  gtest_discover_tests(${layer}_test DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${layer} ENVIRONMENT "STRATA_TEST_TMPDIR=${CMAKE_BINARY_DIR}/test-tmp")
endfunction()

# strata_proto(<target> <layer> <file.proto> <comment>): a static library <target> of the C++
# that protoc generates from the layer's <file.proto>, included as "<layer>/<file>.pb.h" and
# compiled without strata's warning flags (generated code is not ours to fix). Pass <target>
# to strata_library's GENERATED.
function(strata_proto target layer proto comment)
  get_filename_component(_stem ${proto} NAME_WE)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  set(_out ${_dir}/${layer}/${_stem}.pb.cc ${_dir}/${layer}/${_stem}.pb.h)
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}/${layer}
    COMMAND protobuf::protoc --proto_path=${CMAKE_CURRENT_SOURCE_DIR}
      --cpp_out=${_dir}/${layer} ${CMAKE_CURRENT_SOURCE_DIR}/${proto}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${proto} protobuf::protoc
    COMMENT "protoc: ${comment}"
    VERBATIM)
  add_library(${target} STATIC ${_dir}/${layer}/${_stem}.pb.cc)
  target_include_directories(${target} SYSTEM PUBLIC ${_dir})
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf)
endfunction()

# Links `target` (an executable) with tcmalloc instead of glibc's malloc. A server's many
# threads allocating and freeing request-sized buffers contend in glibc's arenas: with
# tcmalloc, strata-server-bench's rollout adds at 64 clients ran ~40% faster on both the HTTP
# and the embedded side (docs/benchmarks.md). Libraries never pick an allocator: embedding
# programs choose their own. Sanitizer and fuzz builds keep the sanitizer's allocator.
function(strata_use_tcmalloc target)
  if(STRATA_TCMALLOC_LIBRARY AND NOT STRATA_SANITIZE AND NOT STRATA_BUILD_FUZZ)
    target_link_libraries(${target} PRIVATE ${STRATA_TCMALLOC_LIBRARY})
    # Its thread-cache budget, set before main() (src/util/tcmalloc_tuning.cc).
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src/util/tcmalloc_tuning.cc)
  endif()
endfunction()

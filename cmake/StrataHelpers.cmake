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

# strata_library(NAME <layer> DEPS <targets...>)
# Builds every *.cc in the current folder except tests, fuzzers and mains into strata_<layer>.
function(strata_library)
  cmake_parse_arguments(ARG "" "NAME" "DEPS;PRIVATE_DEPS;EXTRA_SOURCES" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER _srcs EXCLUDE REGEX "(_test|_fuzz|_main)\\.cc$")
  add_library(strata_${ARG_NAME} STATIC ${_srcs} ${ARG_EXTRA_SOURCES})
  add_library(strata::${ARG_NAME} ALIAS strata_${ARG_NAME})
  target_include_directories(strata_${ARG_NAME}
    PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(strata_${ARG_NAME} PRIVATE ${STRATA_WARNINGS})
  target_link_libraries(strata_${ARG_NAME} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  strata_layer_tests(${ARG_NAME})
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
  target_link_libraries(${layer}_test PRIVATE strata_${layer} strata_testing GTest::gmock_main
    nlohmann_json::nlohmann_json)
  gtest_discover_tests(${layer}_test DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${layer} ENVIRONMENT "STRATA_TEST_TMPDIR=${CMAKE_BINARY_DIR}/test-tmp")
endfunction()

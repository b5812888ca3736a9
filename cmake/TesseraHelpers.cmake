# tessera_add_library(<name> SOURCES <...> [DEPS <...>])
#   One static library per source directory; include paths are rooted at src/ so that code
#   includes "tessera/storage/memtable.h".
function(tessera_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tessera_add_test(<name> SOURCES <...> [DEPS <...>] [LABELS <...>])
#   A GoogleTest binary; every test in it is registered with ctest. Tests labelled `slow` are
#   still part of `make test`, but can be skipped locally with `ctest -LE slow`.
function(tessera_add_test name)
  if(NOT TESSERA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${labels}" TIMEOUT 600)
endfunction()

# tessera_add_fuzzer(<name> SOURCES <...> [DEPS <...>])
function(tessera_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endfunction()

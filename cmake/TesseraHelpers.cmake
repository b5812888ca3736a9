# tessera_add_library(<name> SOURCES <...> [DEPS <...>])
#   One static library per source directory; include paths are rooted at src/ so that code
#   includes "tessera/storage/memtable.h".
function(tessera_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tessera_add_test(<name> SOURCES <...> [DEPS <...>] [LABELS <...>] [DEFINITIONS <...>]
#                  [RUNS <target>...] [TSAN])
#   A GoogleTest binary; every test in it is registered with ctest. Tests labelled `slow` are
#   still part of `make test`, but can be skipped locally with `ctest -LE slow`. DEFINITIONS
#   are private compile definitions (e.g. a binary's path); RUNS names the executables the test
#   starts as child processes, which are then built before it. TSAN: the test links no gRPC,
#   so the TSan build runs it (the `tsan_tests` target builds it, scripts/run_tsan_tests.sh
#   runs it; see docs/testing.md). Nothing is defined when TESSERA_BUILD_TESTS is OFF.
function(tessera_add_test name)
  if(NOT TESSERA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "TSAN" "" "SOURCES;DEPS;LABELS;DEFINITIONS;RUNS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(ARG_DEFINITIONS)
    target_compile_definitions(${name} PRIVATE ${ARG_DEFINITIONS})
  endif()
  if(ARG_RUNS)
    add_dependencies(${name} ${ARG_RUNS})
  endif()
  set(labels unit)
  if(ARG_LABELS)
    set(labels ${ARG_LABELS})
  endif()
  if(ARG_TSAN)
    set_property(GLOBAL APPEND PROPERTY TESSERA_TSAN_TESTS ${name})
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

# tessera_add_proto_library(<name> PROTOS <...> [GRPC <...>])
#   A static library of the C++ generated from .proto files (paths relative to the calling
#   directory, which is the import root). Outputs land in the calling directory's binary dir,
#   mirroring the .proto paths, which is the library's PUBLIC include dir. Files listed under
#   GRPC (those that declare a service) also get .grpc.pb.*. Each output depends on every proto
#   of the library: imports are few and regenerating is cheap, and this keeps an edited import
#   from leaving stale descriptors behind. Generated code compiles without warnings (-w).
function(tessera_add_proto_library name)
  cmake_parse_arguments(ARG "" "" "PROTOS;GRPC;DEPS" ${ARGN})
  set(root "${CMAKE_CURRENT_SOURCE_DIR}")
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}")
  set(all_protos)
  foreach(rel IN LISTS ARG_PROTOS)
    list(APPEND all_protos "${root}/${rel}")
  endforeach()
  set(gen_srcs)
  foreach(rel IN LISTS ARG_PROTOS)
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    set(outs "${gen_dir}/${stem}.pb.cc" "${gen_dir}/${stem}.pb.h")
    set(grpc_args)
    if(rel IN_LIST ARG_GRPC)
      list(APPEND outs "${gen_dir}/${stem}.grpc.pb.cc" "${gen_dir}/${stem}.grpc.pb.h")
      set(grpc_args
        --grpc_out=${gen_dir}
        --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>)
    endif()
    add_custom_command(
      OUTPUT ${outs}
      COMMAND protobuf::protoc --proto_path=${root} --cpp_out=${gen_dir} ${grpc_args}
              ${root}/${rel}
      DEPENDS ${all_protos} protobuf::protoc gRPC::grpc_cpp_plugin
      COMMENT "protoc ${rel}"
      VERBATIM)
    list(APPEND gen_srcs ${outs})
  endforeach()
  add_library(${name} STATIC ${gen_srcs})
  target_include_directories(${name} PUBLIC "${gen_dir}")
  # DEPS: proto libraries whose files these import.
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} gRPC::grpc++ protobuf::libprotobuf)
  target_compile_options(${name} PRIVATE -w)
endfunction()

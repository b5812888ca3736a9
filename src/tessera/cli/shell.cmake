# `tessera shell` (commands.h): the interactive / scripted data shell over the C++ client.
# Included by this folder's CMakeLists.txt, so paths are relative to it.
pkg_check_modules(LIBEDIT REQUIRED IMPORTED_TARGET libedit)

tessera_add_library(tessera_cmd_shell
  SOURCES shell.cc shell_executor.cc shell_format.cc shell_line_editor.cc shell_parser.cc
          shell_progress.cc shell_schema.cc
  DEPS tessera_client tessera_model tessera_gc_rule_proto tessera_util tessera_cli_common CLI11::CLI11 fmt::fmt
       absl::synchronization PkgConfig::LIBEDIT)
target_link_libraries(tessera PRIVATE tessera_cmd_shell)

# Parsing, formatting, schema resolution, progress and completion: no server.
tessera_add_test(shell_test
  SOURCES shell_parser_test.cc shell_format_test.cc shell_line_editor_test.cc
  DEPS tessera_cmd_shell)

# `tessera shell -e/-f` as a process against cbtemulator and, when built, `tessera serve`.
tessera_add_test(shell_e2e_test
  SOURCES shell_e2e_test.cc
  DEPS tessera_cmd_shell tessera_testing
  DEFINITIONS TESSERA_BINARY_PATH="$<TARGET_FILE:tessera>"
  RUNS tessera)

# Record framing, the commit log and the manifest (see docs/log_format.md).
tessera_add_library(tessera_storage_log
  SOURCES log_writer.cc
          log_reader.cc
          commit_log.cc
          version_edit.cc
          manifest.cc
  DEPS tessera_storage_core tessera_util)

tessera_add_test(log_test
  SOURCES log_test.cc commit_log_test.cc version_edit_test.cc manifest_test.cc
  DEPS tessera_storage_log tessera_testing)

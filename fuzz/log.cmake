# Log framing and manifest decoding (see docs/log_format.md).
tessera_add_fuzzer(log_reader_fuzzer
  SOURCES log_reader_fuzzer.cc
  DEPS tessera_storage_log)
tessera_add_fuzzer(manifest_fuzzer
  SOURCES manifest_fuzzer.cc
  DEPS tessera_storage_log)

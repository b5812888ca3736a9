# The server's request decoding: RowFilters (compile + apply) and mutation lists, from
# arbitrary wire bytes. Nothing a client sends may crash the server.
tessera_add_fuzzer(row_filter_fuzzer SOURCES row_filter_fuzzer.cc DEPS tessera_server_core)
tessera_add_fuzzer(mutation_builder_fuzzer SOURCES mutation_builder_fuzzer.cc
  DEPS tessera_server_data)

# `tessera serve`: one node serving the Bigtable API (serve.cc over tessera_server).
tessera_add_library(tessera_cmd_serve
  SOURCES serve.cc
  DEPS tessera_server tessera_placement tessera_cli_common CLI11::CLI11 spdlog::spdlog)
target_link_libraries(tessera PRIVATE tessera_cmd_serve)

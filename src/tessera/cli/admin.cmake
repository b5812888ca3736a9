# `tessera admin`: operator commands (status) against a running node.
tessera_add_library(tessera_cmd_admin
  SOURCES admin.cc
  DEPS tessera_cluster_proto tessera_cli_common CLI11::CLI11 fmt::fmt gRPC::grpc++)
target_link_libraries(tessera PRIVATE tessera_cmd_admin)

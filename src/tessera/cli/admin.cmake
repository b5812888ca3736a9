# `tessera admin`: operator commands (status, tablets, ring, removenode, info, tablestats,
# compactionstats, flush, compact, repair, snapshot, listsnapshots, clearsnapshot, restore, principals,
# grant, revoke, token, setcompactionthroughput, getcompactionthroughput) against a running node.
tessera_add_library(tessera_cmd_admin
  SOURCES admin.cc admin_access.cc admin_node.cc admin_snapshot.cc admin_repair.cc admin_node_format.cc admin_tablets_format.cc admin_ring_format.cc
  DEPS tessera_proto tessera_cluster_proto tessera_tablet_admin_proto tessera_node_admin_proto tessera_access_admin_proto tessera_cmd_shell tessera_catalog
       tessera_placement
       tessera_cli_common CLI11::CLI11 fmt::fmt nlohmann_json::nlohmann_json gRPC::grpc++)
target_link_libraries(tessera PRIVATE tessera_cmd_admin)

# The tablets table and JSON from hand-built answers: no server.
tessera_add_test(admin_tablets_format_test
  SOURCES admin_tablets_format_test.cc admin_ring_format_test.cc admin_node_format_test.cc
          admin_repair_test.cc
  DEPS tessera_cmd_admin nlohmann_json::nlohmann_json)

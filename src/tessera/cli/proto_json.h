// A protobuf message as JSON for people and scripts: field names as in the .proto, every
// field present (unset scalars with their defaults, unset repeated fields as []), and numbers
// as JSON numbers — protobuf's own MessageToJsonString prints 64-bit integers as strings
// ("load_bytes":"46303434"), which jq and most scripts then have to convert back.
//
// Enums print as their value names, bytes as base64, maps as objects; unset sub-messages are
// left out (as protobuf's printer does).
//
// Thread-safety: pure function.
#pragma once

#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace tessera::cli {

nlohmann::json ProtoToJson(const google::protobuf::Message& message);

}  // namespace tessera::cli

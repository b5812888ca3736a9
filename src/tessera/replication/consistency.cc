#include "tessera/replication/consistency.h"

#include <algorithm>

namespace tessera::replication {

std::string_view WriteLevelName(WriteLevel level) {
  switch (level) {
    case WriteLevel::kOne:
      return "one";
    case WriteLevel::kQuorum:
      return "quorum";
    case WriteLevel::kAll:
      return "all";
    case WriteLevel::kLocalQuorum:
      return "local_quorum";
  }
  return "unknown";
}

std::string_view ReadLevelName(ReadLevel level) {
  switch (level) {
    case ReadLevel::kPrimary:
      return "primary";
    case ReadLevel::kQuorum:
      return "quorum";
    case ReadLevel::kOne:
      return "one";
  }
  return "unknown";
}

std::optional<WriteLevel> ParseWriteLevel(std::string_view name) {
  for (WriteLevel l : {WriteLevel::kOne, WriteLevel::kQuorum, WriteLevel::kAll,
                       WriteLevel::kLocalQuorum}) {
    if (WriteLevelName(l) == name) return l;
  }
  return std::nullopt;
}

std::optional<ReadLevel> ParseReadLevel(std::string_view name) {
  for (ReadLevel l : {ReadLevel::kPrimary, ReadLevel::kQuorum, ReadLevel::kOne}) {
    if (ReadLevelName(l) == name) return l;
  }
  return std::nullopt;
}

std::optional<WriteLevel> WriteLevelFromInt(int value) {
  if (value < 1 || value > 4) return std::nullopt;
  return static_cast<WriteLevel>(value);
}

std::optional<ReadLevel> ReadLevelFromInt(int value) {
  if (value < 1 || value > 3) return std::nullopt;
  return static_cast<ReadLevel>(value);
}

size_t RequiredAcks(WriteLevel level, size_t members, size_t local_members) {
  switch (level) {
    case WriteLevel::kOne:
      return 1;
    case WriteLevel::kQuorum:
      return Majority(members);
    case WriteLevel::kAll:
      return members;
    case WriteLevel::kLocalQuorum:
      return std::max<size_t>(1, local_members == 0 ? 1 : Majority(local_members));
  }
  return members;
}

}  // namespace tessera::replication

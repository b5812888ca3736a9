// Constants of the log record framing, shared by LogWriter and LogReader. The commit log and the
// manifest are both sequences of such records. The format is described atop log_writer.cc and in
// docs/log_format.md:
//
//   record := masked_crc32c(4) length(4) type(1) payload[length]
//
// fixed32 fields are little-endian; the crc covers length, type and payload.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::storage::log {

enum class RecordType : uint8_t {
  // Never written: a header of zero bytes (a preallocated or zero-filled tail) is never valid.
  kZero = 0,
  // A whole record. The only type written by this version; any other value is rejected.
  kFull = 1,
};

// masked crc32c (4) + length (4) + type (1).
inline constexpr size_t kHeaderSize = 9;

// Largest payload a record may carry. A header announcing more is corrupt; the bound keeps a
// damaged length from making the reader allocate or wait for gigabytes.
inline constexpr uint32_t kMaxRecordSize = 256u << 20;  // 256 MiB

}  // namespace tessera::storage::log

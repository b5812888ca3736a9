// Reads the input as a log file (commit-log segment or MANIFEST framing) and checks what the
// reader reports: it never crashes, reports only DataLoss, and every record it returns
// re-encodes to exactly the bytes it was read from.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tessera/storage/log_format.h"
#include "tessera/storage/log_reader.h"
#include "tessera/storage/log_writer.h"
#include "tessera/util/logging.h"
#include "tessera/util/mem_file_system.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  spdlog::set_level(spdlog::level::off);  // torn tails are logged; too noisy here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tessera::storage::log::LogReader;
  using tessera::storage::log::LogWriter;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string path = "/fuzz/segment.log";

  tessera::MemFileSystem fs;
  Check(fs.CreateDirs("/fuzz").ok());
  Check(tessera::WriteStringToFile(&fs, path, input, /*sync=*/false).ok());
  auto file = fs.NewSequentialFile(path);
  Check(file.ok());
  LogReader reader(std::move(*file), path);

  std::string reencoded;
  std::string_view record;
  while (true) {
    auto more = reader.ReadRecord(&record);
    if (!more.ok()) {
      Check(absl::IsDataLoss(more.status()));
      Check(more.status().message().find(path) != std::string_view::npos);
      break;
    }
    if (!*more) {
      if (reader.TornTail()) {
        Check(reader.EndOfValidData() + reader.TornBytes() == size);
      } else {
        Check(reader.EndOfValidData() == size);
      }
      break;
    }
    Check(reader.LastRecordOffset() == reencoded.size());
    LogWriter::AppendFrame(record, &reencoded);
    Check(reader.EndOfValidData() == reencoded.size());
  }
  Check(reencoded.size() <= size);
  Check(input.substr(0, reencoded.size()) == reencoded);
  return 0;
}

// Opens a manifest directory built from the input. The first byte picks how:
//   mode 0: the rest is the MANIFEST file; CURRENT is correct;
//   mode 1: the next byte is the length of CURRENT's contents, taken from the input; the rest is
//           the MANIFEST file;
//   mode 2: the rest is a sequence of (1-byte length, payload) chunks, each written as a properly
//           framed record, so that the edit decoder and ManifestState::Apply see arbitrary edits.
// Open must either fail with DataLoss or give a state that survives a snapshot round trip, takes
// one more edit and reopens identically.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tessera/storage/log_writer.h"
#include "tessera/storage/manifest.h"
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
  using tessera::storage::Manifest;
  using tessera::storage::ManifestState;
  using tessera::storage::VersionEdit;
  if (size < 1) return 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const int mode = static_cast<uint8_t>(input[0]) % 3;
  input.remove_prefix(1);

  std::string current = "MANIFEST-000001\n";
  std::string manifest;
  if (mode == 0) {
    manifest = std::string(input);
  } else if (mode == 1) {
    if (input.empty()) return 0;
    size_t n = std::min<size_t>(static_cast<uint8_t>(input[0]), input.size() - 1);
    current = std::string(input.substr(1, n));
    manifest = std::string(input.substr(1 + n));
  } else {
    while (!input.empty()) {
      size_t n = std::min<size_t>(static_cast<uint8_t>(input[0]), input.size() - 1);
      tessera::storage::log::LogWriter::AppendFrame(input.substr(1, n), &manifest);
      input.remove_prefix(1 + n);
    }
  }

  tessera::MemFileSystem fs;
  Check(fs.CreateDirs("/db").ok());
  Check(tessera::WriteStringToFile(&fs, "/db/CURRENT", current, true).ok());
  Check(tessera::WriteStringToFile(&fs, "/db/MANIFEST-000001", manifest, true).ok());
  Check(fs.SyncDir("/db").ok());

  auto opened = Manifest::Open(&fs, "/db", /*create_if_missing=*/false);
  if (!opened.ok()) {
    Check(absl::IsDataLoss(opened.status()));
    return 0;
  }
  ManifestState state = (*opened)->CopyState();
  ManifestState rebuilt;
  Check(rebuilt.Apply(state.ToSnapshotEdit()).ok());
  Check(rebuilt == state);

  VersionEdit edit;
  edit.AddTablet(0xfeedfacecafe, "fuzz");
  Check((*opened)->LogAndApply(edit).ok());
  Check(state.Apply(edit).ok());
  opened->reset();
  auto reopened = Manifest::Open(&fs, "/db", /*create_if_missing=*/false);
  Check(reopened.ok());
  Check((*reopened)->state() == state);
  return 0;
}

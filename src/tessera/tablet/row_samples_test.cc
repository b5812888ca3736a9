#include "tessera/tablet/row_samples.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/model/cell_key.h"
#include "tessera/storage/comparator.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/memtable.h"
#include "tessera/storage/table_builder.h"
#include "tessera/util/mem_file_system.h"

namespace tessera::tablet {
namespace {

using std::string_literals::operator""s;

std::string RowKey(int i) { return "row\x00"s + std::to_string(1000 + i); }

// Cells of rows 0..n-1, `cells` each, as internal keys in order.
std::vector<std::pair<std::string, std::string>> Entries(int rows, int cells) {
  std::vector<std::pair<std::string, std::string>> out;
  uint64_t seq = 1;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cells; ++c) {
      std::string cell;
      model::AppendCellKey(&cell, RowKey(r), "f", "q" + std::to_string(c), 1);
      out.emplace_back(storage::MakeInternalKey(cell, seq++, storage::ValueType::kValue),
                       std::string(100, 'v'));
    }
  }
  return out;
}

TEST(RowSamplesTest, OnePiecePerDataBlockFromTheIndex) {
  MemFileSystem fs;
  ASSERT_TRUE(fs.CreateDirs("/t").ok());
  storage::TableOptions options;
  options.comparator = storage::InternalKeyComparator();
  options.block_size = 1024;
  options.compression = storage::CompressionType::kNone;
  const auto entries = Entries(100, 5);
  uint64_t size = 0;
  {
    StatusOr<std::unique_ptr<WritableFile>> file = fs.NewWritableFile("/t/1.sst");
    ASSERT_TRUE(file.ok()) << file.status();
    storage::TableBuilder builder(options, file->get());
    for (const auto& [k, v] : entries) builder.Add(k, v);
    ASSERT_TRUE(builder.Finish().ok());
    size = builder.FileSize();
    ASSERT_TRUE((*file)->Close().ok());
  }
  StatusOr<std::vector<RowSample>> samples = SampleTableIndex(&fs, "/t/1.sst", size);
  ASSERT_TRUE(samples.ok()) << samples.status();
  // About 8 cells of ~130 bytes per 1 KiB block: 500 cells in 60-70 blocks.
  EXPECT_GT(samples->size(), 50u);
  EXPECT_LT(samples->size(), 80u);
  uint64_t total = 0;
  for (size_t i = 0; i < samples->size(); ++i) {
    const RowSample& s = (*samples)[i];
    EXPECT_EQ(0u, s.row.rfind("row\x00"s, 0)) << "decoded row expected";
    if (i > 0) {
      EXPECT_LE((*samples)[i - 1].row, s.row);
    }
    if (i + 1 < samples->size()) {
      EXPECT_GT(s.bytes, 1024u);  // a block is cut once past block_size; the last is the rest
    }
    total += s.bytes;
  }
  EXPECT_EQ(RowKey(99), samples->back().row);
  EXPECT_LT(total, size);
  EXPECT_GT(total, size * 8 / 10);

  // A damaged footer or a missing file is an error, not a sample.
  EXPECT_FALSE(SampleTableIndex(&fs, "/t/1.sst", size - 1).ok());
  EXPECT_FALSE(SampleTableIndex(&fs, "/t/none.sst", size).ok());
  ASSERT_TRUE(fs.FlipBitForTesting("/t/1.sst", size - 20, 3).ok());
  StatusOr<std::vector<RowSample>> damaged = SampleTableIndex(&fs, "/t/1.sst", size);
  EXPECT_TRUE(absl::IsDataLoss(damaged.status())) << damaged.status();
}

TEST(RowSamplesTest, IteratorPiecesCoverEverything) {
  storage::MemTable mem;
  const auto entries = Entries(50, 4);
  uint64_t bytes = 0;
  for (const auto& [k, v] : entries) {
    storage::ParsedInternalKey parsed;
    ASSERT_TRUE(storage::ParseInternalKey(k, &parsed));
    mem.Add(parsed.sequence, storage::ValueType::kValue, parsed.user_key, v);
  }
  std::vector<RowSample> out;
  std::unique_ptr<storage::Iterator> it = mem.NewIterator();
  ASSERT_TRUE(SampleIterator(it.get(), 2000, &out).ok());
  uint64_t total = 0;
  for (const RowSample& s : out) total += s.bytes;
  for (const auto& [k, v] : entries) bytes += k.size() + v.size();
  EXPECT_EQ(bytes, total);
  EXPECT_GE(out.size(), bytes / 2200);
  EXPECT_LE(out.size(), bytes / 2000 + 1);
  EXPECT_EQ(RowKey(49), out.back().row);

  std::vector<RowSample> none;
  storage::MemTable empty;
  it = empty.NewIterator();
  ASSERT_TRUE(SampleIterator(it.get(), 2000, &none).ok());
  EXPECT_TRUE(none.empty());

  // Keys that are not cells: DataLoss.
  storage::MemTable bad;
  bad.Add(1, storage::ValueType::kValue, "not a cell key", std::string(3000, 'x'));
  it = bad.NewIterator();
  EXPECT_TRUE(absl::IsDataLoss(SampleIterator(it.get(), 2000, &none)));
}

}  // namespace
}  // namespace tessera::tablet

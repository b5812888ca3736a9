// Damaged tables: each case flips a bit in (or cuts) one part of a table and checks the
// outcome. Corruption must give DataLoss naming the file and the offset of the damaged block,
// never wrong data and never a crash. The one documented fallback: a damaged filter block is
// dropped at open (filter_status() says why) and the table is read without it.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera/storage/table.h"
#include "tessera/storage/table_test_util.h"

namespace tessera::storage {
namespace {

using testing::BuildTableForTesting;
using testing::KVMap;
using testing::OpenTableForTesting;
using testing::RowExtractorForTesting;

constexpr char kPath[] = "/damaged.sst";

bool NamesOffset(const Status& s, uint64_t offset) {
  return s.message().find(StrCat(kPath, " at offset ", offset)) != absl::string_view::npos;
}

// Where the parts of a table are, decoded with the format's own pieces.
struct Layout {
  Footer footer;
  uint64_t footer_offset = 0;
  std::vector<BlockHandle> data_blocks;
  BlockHandle properties;
};

Layout ReadLayout(MemFileSystem* fs) {
  Layout layout;
  const std::string bytes = *ReadFileToString(fs, kPath);
  layout.footer_offset = bytes.size() - Footer::kEncodedLength;
  EXPECT_TRUE(layout.footer
                  .DecodeFrom(std::string_view(bytes).substr(layout.footer_offset), kPath,
                              layout.footer_offset)
                  .ok());
  auto block_at = [&](const BlockHandle& h) {
    BlockContents contents;
    EXPECT_TRUE(DecodeStoredBlock(std::string_view(bytes).substr(h.offset, h.size + 5), kPath,
                                  h.offset, &contents)
                    .ok());
    if (contents.owned == nullptr) {
      auto copy = std::unique_ptr<char[]>(new char[contents.data.size() + 1]);
      std::memcpy(copy.get(), contents.data.data(), contents.data.size());
      contents.data = std::string_view(copy.get(), contents.data.size());
      contents.owned = std::move(copy);
    }
    return *Block::Create(std::move(contents), kPath, h.offset);
  };
  BlockIter it;
  it.Init(BytewiseComparator(), block_at(layout.footer.index), kPath, 0);
  for (it.SeekToFirst(); it.Valid(); it.Next()) {
    std::string_view v = it.value();
    BlockHandle h;
    EXPECT_TRUE(h.DecodeFrom(&v));
    layout.data_blocks.push_back(h);
  }
  it.Init(BytewiseComparator(), block_at(layout.footer.metaindex), kPath, 0);
  it.SeekToFirst();
  std::string_view v = it.value();
  EXPECT_TRUE(layout.properties.DecodeFrom(&v));
  return layout;
}

class TableCorruptionTest : public ::testing::Test {
 protected:
  void Build(CompressionType compression, int entries = 600, int block_size = 1024) {
    options_.compression = compression;
    options_.block_size = block_size;
    options_.filter_key_extractor = &extractor_;
    model_.clear();
    for (int i = 0; i < entries; ++i) {
      char key[32];
      std::snprintf(key, sizeof(key), "row%05d/col", i);
      model_[key] = std::string(30, static_cast<char>('a' + i % 7)) + std::to_string(i);
    }
    ASSERT_TRUE(BuildTableForTesting(&fs_, kPath, options_, model_).ok());
    layout_ = ReadLayout(&fs_);
    ASSERT_GE(layout_.data_blocks.size(), 3u);
  }

  StatusOr<std::unique_ptr<Table>> Open(bool in_memory = false) {
    return OpenTableForTesting(&fs_, kPath, options_, nullptr, in_memory);
  }

  void FlipBit(uint64_t offset, int bit = 3) {
    ASSERT_TRUE(fs_.FlipBitForTesting(kPath, offset, bit).ok());
  }

  // Scans forward and backward: every entry returned must be the model's next one; a scan
  // that stops early must report DataLoss. Returns the first error (OK for a full scan).
  Status ScanChecked(const Table& table) {
    auto it = table.NewIterator({});
    auto m = model_.begin();
    for (it->SeekToFirst(); it->Valid(); it->Next(), ++m) {
      EXPECT_NE(m, model_.end());
      if (m == model_.end()) return absl::InternalError("extra entries");
      EXPECT_EQ(it->key(), m->first);
      EXPECT_EQ(it->value(), m->second);
    }
    const Status forward = it->status();
    if (forward.ok()) {
      EXPECT_EQ(m, model_.end());
    } else {
      EXPECT_EQ(forward.code(), absl::StatusCode::kDataLoss) << forward;
    }
    auto back = table.NewIterator({});
    auto r = model_.rbegin();
    for (back->SeekToLast(); back->Valid(); back->Prev(), ++r) {
      EXPECT_NE(r, model_.rend());
      if (r == model_.rend()) return absl::InternalError("extra entries");
      EXPECT_EQ(back->key(), r->first);
      EXPECT_EQ(back->value(), r->second);
    }
    if (back->status().ok()) {
      EXPECT_EQ(r, model_.rend());
    } else {
      EXPECT_EQ(back->status().code(), absl::StatusCode::kDataLoss) << back->status();
    }
    EXPECT_EQ(forward.ok(), back->status().ok());
    return forward;
  }

  MemFileSystem fs_;
  RowExtractorForTesting extractor_;
  TableOptions options_;
  KVMap model_;
  Layout layout_;
};

TEST_F(TableCorruptionTest, DataBlockBitFlipIsDataLossNamingTheBlock) {
  for (CompressionType c :
       {CompressionType::kNone, CompressionType::kLz4, CompressionType::kZstd}) {
    SCOPED_TRACE(static_cast<int>(c));
    Build(c);
    const BlockHandle victim = layout_.data_blocks[2];
    FlipBit(victim.offset + victim.size / 2);
    auto table = Open();
    ASSERT_TRUE(table.ok()) << table.status();  // data blocks are read on demand
    const Status s = ScanChecked(**table);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(NamesOffset(s, victim.offset)) << s;

    // A seek into the damaged block fails; seeks elsewhere still work.
    auto it = (*table)->NewIterator({});
    it->Seek("row00000/col");
    ASSERT_TRUE(it->Valid());
    EXPECT_EQ(it->key(), "row00000/col");
    it->Seek(std::next(model_.begin(), model_.size() - 1)->first);
    ASSERT_TRUE(it->Valid());
    // Find a key inside the victim block: the first key after the previous block's last.
    auto it2 = (*table)->NewIterator({});
    bool failed = false;
    for (const auto& [k, v] : model_) {
      it2 = (*table)->NewIterator({});
      it2->Seek(k);
      if (!it2->Valid()) {
        failed = true;
        EXPECT_TRUE(NamesOffset(it2->status(), victim.offset)) << it2->status();
        break;
      }
      EXPECT_EQ(it2->value(), v);
    }
    EXPECT_TRUE(failed);

    // An in-memory table checks every block at open.
    auto in_memory = Open(/*in_memory=*/true);
    ASSERT_FALSE(in_memory.ok());
    EXPECT_EQ(in_memory.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(NamesOffset(in_memory.status(), victim.offset)) << in_memory.status();
  }
}

TEST_F(TableCorruptionTest, BlockTrailerFlipIsDataLoss) {
  Build(CompressionType::kLz4);
  const BlockHandle victim = layout_.data_blocks[1];
  FlipBit(victim.offset + victim.size, 1);  // the compression type byte
  auto table = Open();
  ASSERT_TRUE(table.ok());
  const Status s = ScanChecked(**table);
  EXPECT_TRUE(NamesOffset(s, victim.offset)) << s;
}

TEST_F(TableCorruptionTest, IndexBitFlipFailsOpen) {
  Build(CompressionType::kNone);
  FlipBit(layout_.footer.index.offset + 5);
  for (bool in_memory : {false, true}) {
    auto table = Open(in_memory);
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(NamesOffset(table.status(), layout_.footer.index.offset)) << table.status();
  }
}

TEST_F(TableCorruptionTest, FilterBitFlipDropsTheFilter) {
  Build(CompressionType::kNone);
  ASSERT_GT(layout_.footer.filter.size, 0u);
  {
    auto table = Open();
    ASSERT_TRUE(table.ok());
    EXPECT_TRUE((*table)->has_filter());
  }
  FlipBit(layout_.footer.filter.offset + layout_.footer.filter.size / 2);
  for (bool in_memory : {false, true}) {
    auto table = Open(in_memory);
    ASSERT_TRUE(table.ok()) << table.status();
    EXPECT_FALSE((*table)->has_filter());
    EXPECT_EQ((*table)->filter_status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(NamesOffset((*table)->filter_status(), layout_.footer.filter.offset))
        << (*table)->filter_status();
    // Without a filter every key may match, so no row is wrongly ruled out.
    EXPECT_TRUE((*table)->KeyMayMatch("row00001"));
    EXPECT_TRUE((*table)->KeyMayMatch("absent"));
    EXPECT_TRUE(ScanChecked(**table).ok());
  }
}

TEST_F(TableCorruptionTest, FooterBitFlipIsDataLossNamingTheFooter) {
  Build(CompressionType::kNone);
  // Handles, comparator name, version, checksum and magic.
  for (uint64_t at : {0, 9, 17, 40, 48, 50, 100, 112, 117, 121, 127}) {
    SCOPED_TRACE(at);
    FlipBit(layout_.footer_offset + at);
    auto table = Open();
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss) << table.status();
    EXPECT_TRUE(NamesOffset(table.status(), layout_.footer_offset)) << table.status();
    FlipBit(layout_.footer_offset + at);  // repair
    ASSERT_TRUE(Open().ok());
  }
}

TEST_F(TableCorruptionTest, PropertiesAndMetaindexFlipsFailOpen) {
  Build(CompressionType::kZstd);
  for (const BlockHandle& h : {layout_.properties, layout_.footer.metaindex}) {
    FlipBit(h.offset + h.size / 2);
    auto table = Open();
    ASSERT_FALSE(table.ok());
    EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(NamesOffset(table.status(), h.offset)) << table.status();
    FlipBit(h.offset + h.size / 2);
  }
}

TEST_F(TableCorruptionTest, TruncatedFileIsDataLoss) {
  Build(CompressionType::kLz4);
  const uint64_t size = *fs_.GetFileSize(kPath);
  for (uint64_t keep : {size - 1, size - Footer::kEncodedLength, size / 2, uint64_t{127},
                        uint64_t{1}, uint64_t{0}}) {
    SCOPED_TRACE(keep);
    ASSERT_TRUE(fs_.TruncateForTesting(kPath, keep).ok());
    for (bool in_memory : {false, true}) {
      auto table = Open(in_memory);
      ASSERT_FALSE(table.ok());
      EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss) << table.status();
      EXPECT_NE(table.status().message().find(StrCat(kPath, " at offset ")),
                absl::string_view::npos)
          << table.status();
    }
  }
}

TEST_F(TableCorruptionTest, FileShorterThanRecordedSizeIsDataLoss) {
  Build(CompressionType::kNone);
  const uint64_t size = *fs_.GetFileSize(kPath);
  ASSERT_TRUE(fs_.TruncateForTesting(kPath, size - 10).ok());
  auto file = *fs_.NewRandomAccessFile(kPath);
  auto table = Table::Open(options_, kPath, std::move(file), size, nullptr, 0, false);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(NamesOffset(table.status(), size - Footer::kEncodedLength)) << table.status();
}

// A file cut after open (an open table whose file shrinks): reads fail cleanly.
TEST_F(TableCorruptionTest, FileTruncatedAfterOpenIsDataLoss) {
  Build(CompressionType::kNone);
  auto table = Open();
  ASSERT_TRUE(table.ok());
  ASSERT_TRUE(fs_.TruncateForTesting(kPath, layout_.data_blocks[1].offset + 10).ok());
  const Status s = ScanChecked(**table);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(NamesOffset(s, layout_.data_blocks[1].offset)) << s;
}

// Every byte of a small table, one bit at a time: open either fails with DataLoss, or every
// read returns exactly the model's data or stops with DataLoss.
TEST_F(TableCorruptionTest, EveryBitFlipIsDetectedOrHarmless) {
  for (CompressionType c :
       {CompressionType::kNone, CompressionType::kLz4, CompressionType::kZstd}) {
    SCOPED_TRACE(static_cast<int>(c));
    Build(c, /*entries=*/80, /*block_size=*/1024);
    const uint64_t size = *fs_.GetFileSize(kPath);
    int open_failures = 0, read_failures = 0, harmless = 0;
    for (uint64_t offset = 0; offset < size; ++offset) {
      SCOPED_TRACE(offset);
      FlipBit(offset, static_cast<int>(offset % 8));
      for (bool in_memory : {false, true}) {
        auto table = Open(in_memory);
        if (!table.ok()) {
          ASSERT_EQ(table.status().code(), absl::StatusCode::kDataLoss) << table.status();
          ASSERT_NE(table.status().message().find(kPath), absl::string_view::npos);
          ++open_failures;
          continue;
        }
        ASSERT_EQ((*table)->properties().num_entries, model_.size());
        for (const auto& [k, v] : model_) {
          ASSERT_TRUE((*table)->KeyMayMatch(extractor_.FilterKey(k)));
        }
        const Status s = ScanChecked(**table);
        if (HasFailure()) return;
        s.ok() ? ++harmless : ++read_failures;
      }
      FlipBit(offset, static_cast<int>(offset % 8));
    }
    std::printf("compression %d: %llu bytes, %d open failures, %d read failures, %d harmless\n",
                static_cast<int>(c), static_cast<unsigned long long>(size), open_failures,
                read_failures, harmless);
    // Only flips in a damaged filter are harmless (the filter is dropped).
    EXPECT_LE(harmless, 2 * static_cast<int>(layout_.footer.filter.size + kBlockTrailerSize));
  }
}

}  // namespace
}  // namespace tessera::storage

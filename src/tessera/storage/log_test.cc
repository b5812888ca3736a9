// Tests of the record framing: LogWriter and LogReader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tessera/storage/log_reader.h"
#include "tessera/storage/log_test_util.h"
#include "tessera/storage/log_writer.h"
#include "tessera/util/coding.h"
#include "tessera/util/crc32c.h"
#include "tessera/util/mem_file_system.h"
#include "tessera/util/random.h"

namespace tessera::storage::log {
namespace {

// Returns at most `step` bytes per Read, to exercise the reader's refill loop.
class ChoppyFile : public SequentialFile {
 public:
  ChoppyFile(std::string data, size_t step) : data_(std::move(data)), step_(step) {}
  StatusOr<std::string_view> Read(size_t n, char* scratch) override {
    size_t len = std::min({n, step_, data_.size() - pos_});
    std::memcpy(scratch, data_.data() + pos_, len);
    pos_ += len;
    return std::string_view(scratch, len);
  }
  Status Skip(uint64_t n) override {
    pos_ = std::min<uint64_t>(data_.size(), pos_ + n);
    return Status();
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

struct ReadResult {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets;
  Status status;
  bool torn = false;
  uint64_t torn_bytes = 0;
  uint64_t end_of_valid_data = 0;
};

constexpr char kPath[] = "/log/test.log";

ReadResult ReadAll(std::unique_ptr<SequentialFile> file) {
  LogReader reader(std::move(file), kPath);
  ReadResult result;
  std::string_view record;
  while (true) {
    StatusOr<bool> more = reader.ReadRecord(&record);
    if (!more.ok()) {
      result.status = more.status();
      // Sticky.
      StatusOr<bool> again = reader.ReadRecord(&record);
      EXPECT_EQ(again.status(), more.status());
      break;
    }
    if (!*more) {
      StatusOr<bool> again = reader.ReadRecord(&record);
      EXPECT_TRUE(again.ok() && !*again);
      break;
    }
    result.records.emplace_back(record);
    result.offsets.push_back(reader.LastRecordOffset());
  }
  result.torn = reader.TornTail();
  result.torn_bytes = reader.TornBytes();
  result.end_of_valid_data = reader.EndOfValidData();
  return result;
}

ReadResult ReadString(const std::string& contents, size_t step = 1 << 20) {
  return ReadAll(std::make_unique<ChoppyFile>(contents, step));
}

std::string Encode(const std::vector<std::string>& records, std::vector<uint64_t>* offsets) {
  std::string out;
  for (const std::string& r : records) {
    if (offsets) offsets->push_back(out.size());
    LogWriter::AppendFrame(r, &out);
  }
  return out;
}

std::string Frame(uint8_t type, std::string_view payload) {
  std::string out(kHeaderSize, '\0');
  EncodeFixed32(out.data() + 4, payload.size());
  out[8] = static_cast<char>(type);
  out.append(payload);
  EncodeFixed32(out.data(), crc32c::Mask(crc32c::Value(out.data() + 4, 5 + payload.size())));
  return out;
}

std::vector<std::string> SomeRecords(int n) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) records.push_back(std::string(10 + 7 * i, 'a' + i % 26));
  return records;
}

TEST(LogTest, EmptyFileIsCleanEnd) {
  ReadResult r = ReadString("");
  TESSERA_EXPECT_OK(r.status);
  EXPECT_TRUE(r.records.empty());
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(0u, r.end_of_valid_data);
}

TEST(LogTest, RoundTripManySizesThroughFileSystem) {
  uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  std::vector<std::string> records;
  for (size_t size :
       {0, 1, 8, 9, 10, 100, 32767, 32768, 32769, 65535, 65536, 65537, 100000, (1 << 20) + 3, 0}) {
    records.push_back(rnd.Bytes(size));
  }
  for (int i = 0; i < 200; ++i) records.push_back(rnd.Bytes(rnd.Skewed(17)));

  MemFileSystem fs;
  TESSERA_ASSERT_OK(fs.CreateDirs("/log"));
  {
    auto file = fs.NewWritableFile(kPath);
    TESSERA_ASSERT_OK(file);
    LogWriter writer(file->get());
    for (const std::string& r : records) TESSERA_ASSERT_OK(writer.AddRecord(r));
    EXPECT_EQ((*file)->Size(), writer.good_size());
  }
  std::vector<uint64_t> offsets;
  std::string expected = Encode(records, &offsets);
  EXPECT_EQ(expected, ReadFileToString(&fs, kPath).value());

  auto seq = fs.NewSequentialFile(kPath);
  TESSERA_ASSERT_OK(seq);
  ReadResult r = ReadAll(std::move(*seq));
  TESSERA_ASSERT_OK(r.status);
  EXPECT_FALSE(r.torn);
  ASSERT_EQ(records.size(), r.records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i], r.records[i]) << i;
    EXPECT_EQ(offsets[i], r.offsets[i]) << i;
  }
  EXPECT_EQ(expected.size(), r.end_of_valid_data);

  // Tiny reads give the same result.
  ReadResult choppy = ReadString(expected, 7);
  TESSERA_ASSERT_OK(choppy.status);
  EXPECT_EQ(records, choppy.records);
}

TEST(LogTest, AddRecordsIsOneAppend) {
  MemFileSystem fs;
  TESSERA_ASSERT_OK(fs.CreateDirs("/log"));
  auto file = fs.NewWritableFile(kPath);
  TESSERA_ASSERT_OK(file);
  LogWriter writer(file->get());
  std::vector<std::string> records = SomeRecords(50);
  std::vector<std::string_view> views(records.begin(), records.end());
  int64_t ops = fs.MutatingOpsForTesting();
  TESSERA_ASSERT_OK(writer.AddRecords(views));
  EXPECT_EQ(ops + 1, fs.MutatingOpsForTesting());
  TESSERA_ASSERT_OK(writer.AddRecords({}));
  EXPECT_EQ(ops + 1, fs.MutatingOpsForTesting());
  EXPECT_EQ(Encode(records, nullptr), ReadFileToString(&fs, kPath).value());
}

TEST(LogTest, FailedAppendIsSticky) {
  MemFileSystem fs;
  TESSERA_ASSERT_OK(fs.CreateDirs("/log"));
  auto file = fs.NewWritableFile(kPath);
  TESSERA_ASSERT_OK(file);
  LogWriter writer(file->get());
  TESSERA_ASSERT_OK(writer.AddRecord("first"));
  uint64_t good = writer.good_size();
  fs.SetSpaceLimit(good + 5);
  Status s = writer.AddRecord("second record");
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  fs.SetSpaceLimit(0);
  s = writer.AddRecord("x");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(good, writer.good_size());
}

TEST(LogTest, TornTailAtEveryOffsetOfTheLastRecord) {
  std::vector<std::string> records = SomeRecords(3);
  records.push_back(std::string(300, 'z'));
  std::vector<uint64_t> offsets;
  const std::string full = Encode(records, &offsets);
  const uint64_t last = offsets.back();
  for (uint64_t cut = last; cut < full.size(); ++cut) {
    SCOPED_TRACE(cut);
    ReadResult r = ReadString(full.substr(0, cut));
    TESSERA_ASSERT_OK(r.status);
    ASSERT_EQ(3u, r.records.size());
    EXPECT_EQ(last, r.end_of_valid_data);
    EXPECT_EQ(cut != last, r.torn);
    EXPECT_EQ(cut - last, r.torn ? r.torn_bytes : 0);
  }
  ReadResult whole = ReadString(full);
  TESSERA_ASSERT_OK(whole.status);
  EXPECT_EQ(4u, whole.records.size());
  EXPECT_FALSE(whole.torn);
}

TEST(LogTest, TornTailFollowedByZerosIsStillTorn) {
  std::vector<uint64_t> offsets;
  std::string full = Encode(SomeRecords(4), &offsets);
  full.resize(full.size() - 3);
  full.append(4096, '\0');
  ReadResult r = ReadString(full);
  TESSERA_ASSERT_OK(r.status);
  EXPECT_EQ(3u, r.records.size());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(offsets.back(), r.end_of_valid_data);
}

TEST(LogTest, ZeroFilledTailIsTornTail) {
  std::string full = Encode(SomeRecords(5), nullptr);
  const uint64_t valid = full.size();
  full.append(100000, '\0');
  ReadResult r = ReadString(full);
  TESSERA_ASSERT_OK(r.status);
  EXPECT_EQ(5u, r.records.size());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(valid, r.end_of_valid_data);
  EXPECT_EQ(100000u, r.torn_bytes);

  // A file of nothing but zeros.
  ReadResult zeros = ReadString(std::string(5, '\0'));
  TESSERA_ASSERT_OK(zeros.status);
  EXPECT_TRUE(zeros.torn);
  EXPECT_EQ(0u, zeros.end_of_valid_data);
}

TEST(LogTest, ChecksumFailureOfTheLastRecordIsTornTail) {
  std::vector<uint64_t> offsets;
  std::string full = Encode(SomeRecords(4), &offsets);
  full[full.size() - 2] ^= 0x10;
  ReadResult r = ReadString(full);
  TESSERA_ASSERT_OK(r.status);
  EXPECT_EQ(3u, r.records.size());
  EXPECT_TRUE(r.torn);
  EXPECT_EQ(offsets.back(), r.end_of_valid_data);
}

// Every bit flip inside a record that is followed by intact records is DataLoss naming the file
// and the offset of the damaged record, after returning the records before it.
TEST(LogTest, BitFlipInTheMiddleIsDataLossWithFileAndOffset) {
  std::vector<std::string> records = SomeRecords(8);
  std::vector<uint64_t> offsets;
  const std::string full = Encode(records, &offsets);
  const uint64_t begin = offsets[3];
  const uint64_t end = offsets[4];
  for (uint64_t pos = begin; pos < end; ++pos) {
    for (int bit : {0, 7}) {
      SCOPED_TRACE(::testing::Message() << "pos=" << pos << " bit=" << bit);
      std::string damaged = full;
      damaged[pos] ^= static_cast<char>(1 << bit);
      ReadResult r = ReadString(damaged);
      ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
      EXPECT_NE(std::string::npos, r.status.message().find(kPath)) << r.status;
      EXPECT_NE(std::string::npos, r.status.message().find(StrCat("at offset ", begin, ":")))
          << r.status;
      EXPECT_EQ(std::vector<std::string>(records.begin(), records.begin() + 3), r.records);
      EXPECT_FALSE(r.torn);
    }
  }
}

TEST(LogTest, BitFlipThroughMemFileSystem) {
  MemFileSystem fs;
  TESSERA_ASSERT_OK(fs.CreateDirs("/log"));
  std::vector<uint64_t> offsets;
  TESSERA_ASSERT_OK(WriteStringToFile(&fs, kPath, Encode(SomeRecords(6), &offsets), true));
  TESSERA_ASSERT_OK(fs.FlipBitForTesting(kPath, offsets[1] + 2, 3));  // in the length
  auto seq = fs.NewSequentialFile(kPath);
  TESSERA_ASSERT_OK(seq);
  ReadResult r = ReadAll(std::move(*seq));
  ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  EXPECT_NE(std::string::npos, r.status.message().find(StrCat(kPath, " at offset ", offsets[1])))
      << r.status;
  EXPECT_EQ(1u, r.records.size());
}

TEST(LogTest, MissingBytesInTheMiddleIsDataLoss) {
  std::vector<uint64_t> offsets;
  std::string full = Encode(SomeRecords(6), &offsets);
  full.erase(offsets[2] + 4, 3);
  ReadResult r = ReadString(full);
  ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  EXPECT_EQ(2u, r.records.size());
}

TEST(LogTest, UnknownTypeWithValidChecksumIsDataLoss) {
  std::string full = Encode(SomeRecords(2), nullptr);
  const uint64_t at = full.size();
  full += Frame(7, "from the future");
  ReadResult r = ReadString(full);
  ASSERT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  EXPECT_NE(std::string::npos, r.status.message().find(StrCat("at offset ", at)));
  EXPECT_EQ(2u, r.records.size());
}

TEST(LogTest, FrameOfTypeZeroIsNeverValid) {
  // A record of type 0 with a correct checksum, then an intact record: the first one is bad,
  // and because something intact follows it, this is corruption.
  std::string full = Frame(0, "abc") + Frame(1, "def");
  ReadResult r = ReadString(full);
  EXPECT_TRUE(absl::IsDataLoss(r.status)) << r.status;
  // Alone at the end it is a torn tail.
  ReadResult tail = ReadString(Frame(1, "ok") + Frame(0, "abc"));
  TESSERA_ASSERT_OK(tail.status);
  EXPECT_TRUE(tail.torn);
  EXPECT_EQ(std::vector<std::string>{"ok"}, tail.records);
}

TEST(LogTest, HugeLengthDoesNotAllocateAndIsClassified) {
  std::string header(kHeaderSize, '\0');
  EncodeFixed32(header.data(), 12345);
  EncodeFixed32(header.data() + 4, 0xfffffff0u);  // over kMaxRecordSize
  header[8] = 1;
  std::string just_under = header;
  EncodeFixed32(just_under.data() + 4, kMaxRecordSize);  // allowed, but the file is short

  const std::string good = Encode(SomeRecords(2), nullptr);
  for (const std::string& bad : {header, just_under}) {
    ReadResult tail = ReadString(good + bad + "some bytes");
    TESSERA_ASSERT_OK(tail.status);
    EXPECT_TRUE(tail.torn);
    EXPECT_EQ(good.size(), tail.end_of_valid_data);

    ReadResult middle = ReadString(good + bad + Frame(1, "after"));
    EXPECT_TRUE(absl::IsDataLoss(middle.status)) << middle.status;
    EXPECT_EQ(2u, middle.records.size());
  }
}

TEST(LogTest, RandomBytesNeverCrash) {
  uint64_t seed = TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed=" << seed);
  Random rnd(seed);
  for (int i = 0; i < 300; ++i) {
    std::string data = rnd.Bytes(rnd.Uniform(200));
    if (rnd.OneIn(2)) data = Encode(SomeRecords(rnd.Uniform(4)), nullptr) + data;
    ReadResult r = ReadString(data, 1 + rnd.Uniform(50));
    EXPECT_TRUE(r.status.ok() || absl::IsDataLoss(r.status)) << r.status;
    EXPECT_LE(r.end_of_valid_data, data.size());
  }
}

}  // namespace
}  // namespace tessera::storage::log

#include "tests/tablet_copy_test_util.h"

namespace tessera::test {

// f and g ordinary, m in memory (its own locality group: tombstones go to both groups).
TabletDescriptor Descriptor() {
  TabletDescriptor d;
  d.table = "t";
  d.end_row = "z";
  d.schema = MakeSchema("t", {{"f", GcRule::None()}, {"g", GcRule::None()}, {"m", GcRule::None()}});
  d.schema.families["m"].in_memory = true;
  return d;
}

// Every raw entry of the tablet once (a tombstone stored in both locality groups, or an entry in
// a memtable and in the file it was flushed to, counts once), in internal-key order.
std::vector<RawEntry> RawEntries(Engine* engine, TabletId id) {
  std::vector<RawEntry> out;
  StatusOr<std::shared_ptr<tablet::Tablet>> t =
      static_cast<tablet::TabletManager*>(engine)->tablet(id);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return out;
  StatusOr<std::unique_ptr<tablet::EntryIterator>> it = (*t)->NewEntryIterator();
  EXPECT_TRUE(it.ok()) << it.status();
  for (; (*it)->Valid(); (*it)->Next()) {
    if (!out.empty() && out.back().first == (*it)->internal_key()) {
      EXPECT_EQ(out.back().second, (*it)->value());
      continue;
    }
    out.emplace_back(std::string((*it)->internal_key()), std::string((*it)->value()));
  }
  EXPECT_TRUE((*it)->status().ok()) << (*it)->status();
  return out;
}

// The entries a copy carries: the source's raw entries at the copy's sequence, each once.
std::vector<RawEntry> CopiedEntries(const std::vector<std::string>& chunks) {
  std::vector<RawEntry> out;
  for (const std::string& chunk : chunks) {
    StatusOr<std::vector<tablet::ChunkEntry>> entries = tablet::DecodeChunk(chunk);
    EXPECT_TRUE(entries.ok()) << entries.status();
    if (!entries.ok()) continue;
    for (const tablet::ChunkEntry& e : *entries) out.emplace_back(e.internal_key, e.value);
  }
  return out;
}

// "row family:qualifier@ts=value" for every visible cell.
std::vector<std::string> Lines(const Engine& engine, TabletId id) {
  std::vector<std::string> out;
  StatusOr<std::vector<model::Row>> rows = ScanAll(engine, id, {});
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return out;
  for (const model::Row& row : *rows) {
    for (const model::Cell& c : row.cells) {
      out.push_back(
          StrCat(row.key, " ", c.family, ":", c.qualifier, "@", c.timestamp_micros, "=", c.value));
    }
  }
  return out;
}

uint64_t Last(const Engine& engine, TabletId id) {
  StatusOr<uint64_t> last = engine.LastSequence(id);
  EXPECT_TRUE(last.ok()) << last.status();
  return last.value_or(0);
}

Copy ReadCopy(Engine* source, TabletId id, size_t max_bytes) {
  Copy copy;
  StatusOr<std::unique_ptr<TabletCopySource>> s = source->BeginTabletCopy(id);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return copy;
  copy.sequence = (*s)->sequence();
  copy.marks = (*s)->drop_marks();
  for (;;) {
    StatusOr<std::string> chunk = (*s)->NextChunk(max_bytes);
    EXPECT_TRUE(chunk.ok()) << chunk.status();
    if (!chunk.ok() || chunk->empty()) break;
    copy.chunks.push_back(*std::move(chunk));
  }
  copy.entries = CopiedEntries(copy.chunks);
  return copy;
}

std::unique_ptr<TabletCopySink> BeginRebuild(Engine* engine, TabletId id) {
  StatusOr<std::unique_ptr<TabletCopySink>> sink = engine->BeginTabletRebuild(id);
  EXPECT_TRUE(sink.ok()) << sink.status();
  return sink.ok() ? *std::move(sink) : nullptr;
}

// Adds every chunk and finishes (all must succeed).
void Rebuild(Engine* engine, TabletId id, const Copy& copy) {
  std::unique_ptr<TabletCopySink> sink = BeginRebuild(engine, id);
  ASSERT_NE(sink, nullptr);
  for (const std::string& chunk : copy.chunks) ASSERT_TRUE(sink->Add(chunk).ok());
  Status s = sink->Finish(copy.sequence, copy.marks);
  ASSERT_TRUE(s.ok()) << s;
}

}  // namespace tessera::test

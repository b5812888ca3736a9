// One tablet's state, reads and job picking. See tablet.h and docs/tablet.md.
#include "tessera/tablet/tablet.h"

#include <algorithm>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/tablet/compaction.h"
#include "tessera/tablet/leveled.h"
#include "tessera/tablet/row_reader.h"
#include "tessera/tablet/row_samples.h"

namespace tessera::tablet {

using storage::SequenceNumber;

namespace {

LevelOptions LevelOptionsOf(const EngineOptions& o) {
  LevelOptions l;
  l.level0_compaction_files = std::max(1, o.level0_compaction_files);
  l.level0_stop_files = std::max(l.level0_compaction_files, o.level0_stop_files);
  l.level1_bytes = o.level1_bytes > 0 ? o.level1_bytes
                                      : uint64_t{static_cast<uint32_t>(l.level0_compaction_files)} *
                                            o.memtable_bytes;
  l.level_size_multiplier = o.level_size_multiplier;
  l.file_bytes = o.level_file_bytes > 0 ? o.level_file_bytes
                                        : std::max<uint64_t>(o.memtable_bytes / 2, 2 << 20);
  return l;
}

std::vector<const storage::FileMeta*> Metas(const std::vector<std::shared_ptr<TableFile>>& files) {
  std::vector<const storage::FileMeta*> metas;
  metas.reserve(files.size());
  for (const auto& f : files) metas.push_back(&f->meta());
  return metas;
}

}  // namespace

Status InsertMutation(storage::MemTable* mem, SequenceNumber first, std::string_view encoded,
                      SequenceNumber* some_versions_deleted) {
  SequenceNumber seq = first;
  thread_local std::string scratch;
  return model::ForEachCellEntry(encoded, &scratch,
                                 [&](std::string_view key, std::string_view value) {
                                   if (model::DeletesSomeVersions(key, value)) {
                                     *some_versions_deleted = std::max(*some_versions_deleted, seq);
                                   }
                                   mem->Add(seq++, storage::ValueType::kValue, key, value);
                                 });
}

std::string_view TabletDataStateName(TabletDataState state) {
  switch (state) {
    case TabletDataState::kServing:
      return "serving";
    case TabletDataState::kCopying:
      return "copying";
    case TabletDataState::kTombstoned:
      return "tombstoned";
  }
  return "unknown";
}

Tablet::Tablet(TabletId id, TabletDescriptor descriptor, DropMarks drop_marks,
               SequenceNumber flushed_sequence, std::shared_ptr<const FileSet> files,
               TabletDataState state, const TabletContext& context)
    : id_(id), context_(context) {
  absl::MutexLock l(&mu_);
  state_ = state;
  descriptor_ = std::make_shared<const TabletDescriptor>(std::move(descriptor));
  SequenceNumber last = flushed_sequence;
  for (const auto& [family, dropped_at] : drop_marks) last = std::max(last, dropped_at);
  drop_marks_ = std::make_shared<const DropMarks>(std::move(drop_marks));
  mem_ = NewMemTable();
  flushed_sequence_ = flushed_sequence;
  // The files' entries are not read to find deletes of some versions: assume any may be one.
  for (const auto& f : files->files) {
    some_versions_deleted_ = std::max(some_versions_deleted_, f->meta().max_sequence);
    last = std::max(last, f->meta().max_sequence);
  }
  files_ = std::move(files);
  last_sequence_.store(last, std::memory_order_release);
}

void Tablet::RaiseLastSequence(SequenceNumber sequence) {
  if (sequence > last_sequence_.load(std::memory_order_relaxed)) {
    last_sequence_.store(sequence, std::memory_order_release);
  }
}

std::shared_ptr<storage::MemTable> Tablet::NewMemTable() const {
  // Arena blocks scale with the memtable size, so that a small memtable is not one big block.
  storage::MemTableOptions o;
  o.arena_block_size = std::clamp<size_t>(context_.options->memtable_bytes / 16, 4096, 1 << 20);
  o.usage_total = context_.memtable_usage;
  // One filter bit per 8 bytes of memtable: about 17 bits per entry for 140-byte entries.
  o.filter_key_extractor = RowFilterKey();
  o.filter_bits = context_.options->memtable_bytes / 8;
  // One row-index slot (8 bytes) per 256 bytes of memtable, 3 % of it: every row is indexed
  // when rows average 512 bytes or more (a YCSB row of 10 cells is ~1.4 KB); of smaller rows,
  // the first memtable_bytes / 512.
  o.row_index_slots = context_.options->memtable_bytes / 256;
  return std::make_shared<storage::MemTable>(o);
}

std::shared_ptr<const TabletDescriptor> Tablet::descriptor() const {
  absl::MutexLock l(&mu_);
  return descriptor_;
}

std::shared_ptr<const DropMarks> Tablet::drop_marks() const {
  absl::MutexLock l(&mu_);
  return drop_marks_;
}

TabletDataState Tablet::state() const {
  absl::MutexLock l(&mu_);
  return state_;
}

void Tablet::SetState(TabletDataState state) {
  absl::MutexLock l(&mu_);
  state_ = state;
}

Status Tablet::CheckServing() const {
  absl::MutexLock l(&mu_);
  return CheckServingLocked();
}

Status Tablet::CheckServingLocked() const {
  if (state_ == TabletDataState::kServing) return Status();
  return absl::UnavailableError(StrCat("tablet ", id_, " is ", TabletDataStateName(state_),
                                       ": it serves no reads or writes"));
}

// ------------------------------------------------------------------------------------------
// Reads

StatusOr<TabletSnapshot> Tablet::Snapshot() const {
  TabletSnapshot snap;
  // The sequence first: every write up to it is in the memtables (or files) read below.
  snap.sequence = last_sequence();
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckServingLocked());
  snap.descriptor = descriptor_;
  snap.drop_marks = drop_marks_;
  snap.memtables.push_back(mem_);
  for (auto i = imm_.rbegin(); i != imm_.rend(); ++i) snap.memtables.push_back(i->mem);
  snap.files = files_;
  snap.now_micros = context_.clock->NowMicros();
  return snap;
}

StatusOr<std::optional<model::Row>> Tablet::ReadRow(std::string_view row,
                                                    const model::ReadSpec& spec) const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot());
  if (!snap.descriptor->ContainsRow(row)) {
    return absl::InvalidArgumentError(StrCat("row is outside tablet [", snap.descriptor->start_row,
                                             ", ", snap.descriptor->end_row, ")"));
  }
  const TableFile* charged = nullptr;
  StatusOr<std::optional<model::Row>> result =
      ReadRowFromSnapshot(snap, row, spec, /*stats=*/nullptr, &charged);
  if (charged != nullptr) ChargeRead(charged);
  return result;
}

StatusOr<std::unique_ptr<RowIterator>> Tablet::Scan(const model::RowRange& range,
                                                    const model::ReadSpec& spec,
                                                    const ScanOptions& options) const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot());
  if (options.gc_as_of_micros > 0) snap.now_micros = options.gc_as_of_micros;
  // Scans outlive the call: the charge goes to the tablet while it lives.
  ReadCharge charge;
  charge.charge = [self = weak_from_this()](const TableFile* file) {
    if (std::shared_ptr<const Tablet> t = self.lock()) t->ChargeRead(file);
  };
  charge.seed = scans_.fetch_add(1, std::memory_order_relaxed);
  return NewSnapshotScan(std::move(snap), range, spec, options, std::move(charge));
}

void Tablet::ChargeRead(const TableFile* file) const {
  const EngineOptions& o = *context_.options;
  if (o.read_budget_bytes == 0) return;
  const uint64_t budget =
      std::max<uint64_t>({1, o.read_budget_min_reads, file->meta().size / o.read_budget_bytes});
  if (file->AddPassingRead() != budget) return;  // only the read that exhausts it goes on
  {
    absl::MutexLock l(&mu_);
    if (StyleLocked() != CompactionStyle::kLeveled) return;
    bool held = false;
    for (const auto& f : files_->files) held |= f.get() == file;
    if (!held) return;  // compacted meanwhile
    read_exhausted_[file->group() == LocalityGroup::kInMemory ? 1 : 0] = file->meta().number;
  }
  if (context_.read_compaction_due) context_.read_compaction_due(id_);
}

std::optional<size_t> Tablet::ReadExhaustedLocked(
    LocalityGroup group, const std::vector<std::shared_ptr<TableFile>>& group_files) const {
  const uint64_t number = read_exhausted_[static_cast<int>(group)];
  if (number == 0) return std::nullopt;
  for (size_t i = 0; i < group_files.size(); ++i) {
    if (group_files[i]->meta().number == number) return i;
  }
  return std::nullopt;
}

StatusOr<std::unique_ptr<EntryIterator>> Tablet::NewEntryIterator() const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot());
  return std::make_unique<EntryIterator>(std::move(snap));
}

StatusOr<TabletCheckpoint> Tablet::Checkpoint() const {
  absl::MutexLock l(&mu_);
  RETURN_IF_ERROR(CheckServingLocked());
  TabletCheckpoint c;
  c.id = id_;
  c.descriptor = *descriptor_;
  c.drop_marks = *drop_marks_;
  c.flushed_sequence = flushed_sequence_;
  for (const auto& f : files_->files) c.files.push_back({f->meta(), f->path()});
  c.pinned = files_;
  return c;
}

uint64_t Tablet::ApproximateBytes() const {
  absl::MutexLock l(&mu_);
  uint64_t bytes = mem_->ApproximateMemoryUsage();
  for (const auto& i : imm_) bytes += i.mem->ApproximateMemoryUsage();
  for (const auto& f : files_->files) bytes += f->meta().size;
  return bytes;
}

StatusOr<std::vector<std::string>> Tablet::SampleRowKeys(uint64_t every_bytes) const {
  if (every_bytes == 0) return absl::InvalidArgumentError("SampleRowKeys needs every_bytes > 0");
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot());
  // (row, bytes of data ending at that row) pieces from every source, then one walk in row
  // order. The cached file samples stay alive in `file_samples`.
  std::vector<std::shared_ptr<const std::vector<RowSample>>> file_samples;
  std::vector<RowSample> memtable_samples;
  for (const auto& f : snap.files->files) {
    ASSIGN_OR_RETURN(auto samples, f->RowSamples());
    file_samples.push_back(std::move(samples));
  }
  for (const auto& mem : snap.memtables) {
    std::unique_ptr<storage::Iterator> it = mem->NewIterator();
    RETURN_IF_ERROR(SampleIterator(it.get(), context_.options->block_size, &memtable_samples));
  }
  std::vector<std::pair<std::string_view, uint64_t>> pieces;
  for (const auto& samples : file_samples) {
    for (const RowSample& b : *samples) pieces.emplace_back(b.row, b.bytes);
  }
  for (const RowSample& b : memtable_samples) pieces.emplace_back(b.row, b.bytes);
  std::sort(pieces.begin(), pieces.end());
  std::vector<std::string> rows;
  uint64_t pending = 0;
  for (const auto& [row, bytes] : pieces) {
    pending += bytes;
    if (pending < every_bytes || row <= std::string_view(snap.descriptor->start_row) ||
        (!rows.empty() && row <= std::string_view(rows.back()))) {
      continue;
    }
    rows.emplace_back(row);
    pending = 0;
  }
  return rows;
}

Status Tablet::WarmRow(std::string_view row) const {
  ASSIGN_OR_RETURN(TabletSnapshot snap, Snapshot());
  return WarmRowInSnapshot(snap, row);
}

// ------------------------------------------------------------------------------------------
// Write path

Status Tablet::ValidateMutation(const TabletDescriptor& d, const model::RowMutation& m) {
  if (m.empty()) return absl::InvalidArgumentError("a row mutation needs at least one mutation");
  if (!d.ContainsRow(m.row())) {
    return absl::InvalidArgumentError(
        StrCat("row is outside tablet [", d.start_row, ", ", d.end_row, ") of table ", d.table));
  }
  Status bad;
  Status s = model::ForEachMutation(m.encoded(), [&](const model::MutationView& v) {
    if (!bad.ok() || v.type == model::MutationType::kDeleteFromRow) return;
    if (d.schema.Find(v.family) == nullptr) {
      bad = absl::InvalidArgumentError(
          StrCat("family \"", v.family, "\" does not exist in table ", d.table));
    }
  });
  RETURN_IF_ERROR(s);
  return bad;
}

Status Tablet::ValidateBatch(const TabletDescriptor& d, std::span<const model::RowMutation> batch) {
  if (batch.empty()) return absl::InvalidArgumentError("a batch needs at least one row mutation");
  for (size_t i = 0; i < batch.size(); ++i) {
    Status s = ValidateMutation(d, batch[i]);
    if (s.ok()) continue;
    if (batch.size() == 1) return s;
    return Status(s.code(), StrCat("mutation ", i, " of ", batch.size(), ": ", s.message()));
  }
  return Status();
}

namespace {
// The payload that carries the expected sequence of a gap (ReplicationGapExpected).
constexpr char kGapPayload[] = "type.tessera/tablet.ReplicationGap";
}  // namespace

Status ReplicationGapError(TabletId id, SequenceNumber expected, SequenceNumber got) {
  Status s = absl::FailedPreconditionError(StrCat("replication gap in tablet ", id,
                                                  ": expected sequence ", expected,
                                                  ", the batch's first new mutation is at ", got));
  s.SetPayload(kGapPayload, absl::Cord(std::to_string(expected)));
  return s;
}

std::optional<uint64_t> ReplicationGapExpected(const Status& status) {
  if (!absl::IsFailedPrecondition(status)) return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kGapPayload);
  uint64_t expected;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &expected)) {
    return std::nullopt;
  }
  return expected;
}

StatusOr<Tablet::PreparedWrite> Tablet::PrepareWrite(std::span<const model::RowMutation> batch,
                                                     const TabletDescriptor* validated_with,
                                                     uint64_t segment,
                                                     std::optional<SequenceNumber> given_first) {
  absl::MutexLock l(&mu_);
  // Dropped while the writer waited; it fails alone.
  if (removed_) return absl::NotFoundError(StrCat("tablet ", id_, " not found"));
  RETURN_IF_ERROR(CheckServingLocked());
  // The schema changed while the writer waited (a family may be gone).
  if (descriptor_.get() != validated_with) RETURN_IF_ERROR(ValidateBatch(*descriptor_, batch));
  const SequenceNumber base = std::max(assigned_, last_sequence());
  PreparedWrite w;
  w.last = base;
  if (given_first.has_value()) {
    // The primary's numbers: skip what this tablet holds already, then follow on exactly.
    SequenceNumber next = *given_first;
    while (w.skipped < batch.size() && next + batch[w.skipped].size() - 1 <= base) {
      next += batch[w.skipped++].size();
    }
    if (w.skipped == batch.size()) return w;
    if (next <= base) {
      return absl::InternalError(StrCat("tablet ", id_, ": mutation ", w.skipped,
                                        " of the replicated batch takes sequences ", next, "..",
                                        next + batch[w.skipped].size() - 1,
                                        ", across the tablet's last sequence ", base));
    }
    if (next != base + 1) return ReplicationGapError(id_, base + 1, next);
  }
  w.first = base + 1;
  for (size_t i = w.skipped; i < batch.size(); ++i) w.last += batch[i].size();
  if (mem_->Empty() && mem_first_segment_ == 0) mem_first_segment_ = segment;
  w.mem = mem_;
  assigned_ = w.last;
  given_out_ = std::max(given_out_, assigned_);
  return w;
}

void Tablet::AbandonNumbers() {
  absl::MutexLock l(&mu_);
  assigned_ = last_sequence();
}

bool Tablet::FinishWrite(const storage::MemTable* mem, SequenceNumber some_versions_deleted) {
  absl::MutexLock l(&mu_);
  // Before the memtable can be sealed: its flush must know.
  some_versions_deleted_ = std::max(some_versions_deleted_, some_versions_deleted);
  if (mem_.get() == mem && mem_->ApproximateMemoryUsage() >= context_.options->memtable_bytes) {
    return SwitchMemtableLocked();
  }
  return false;
}

Status Tablet::Replay(uint64_t segment, SequenceNumber first, std::string_view mutation) {
  absl::MutexLock l(&mu_);
  if (mem_first_segment_ == 0) mem_first_segment_ = segment;
  RETURN_IF_ERROR(InsertMutation(mem_.get(), first, mutation, &some_versions_deleted_));
  RaiseLastSequence(mem_->LargestSequence());
  if (mem_->ApproximateMemoryUsage() >= context_.options->memtable_bytes) SwitchMemtableLocked();
  return Status();
}

bool Tablet::SwitchMemtable() {
  absl::MutexLock l(&mu_);
  return SwitchMemtableLocked();
}

bool Tablet::SwitchMemtableLocked() {
  if (mem_->Empty()) return false;
  imm_.push_back({mem_, mem_first_segment_});
  mem_ = NewMemTable();
  mem_first_segment_ = 0;
  return true;
}

SequenceNumber Tablet::MarkRemoved() {
  absl::MutexLock l(&mu_);
  removed_ = true;
  return std::max(given_out_, last_sequence());
}

// ------------------------------------------------------------------------------------------
// Background work

bool Tablet::TryStartFlush() {
  absl::MutexLock l(&mu_);
  if (dropping_ || paused_ || flush_running_ || imm_.empty()) return false;
  // A full level 0 waits for the compaction that empties it (one is started after every flush
  // and compaction, and level 0 then has the top score); meanwhile the memtables fill and
  // writers stall on the memory limit.
  if (Level0FullLocked()) return false;
  flush_running_ = true;
  return true;
}

CompactionStyle Tablet::StyleLocked() const {
  std::optional<CompactionStyle> chosen =
      ParseCompactionStyle(descriptor_->schema.options.compaction);
  return chosen.value_or(context_.options->compaction_style);
}

bool Tablet::Level0FullLocked() const {
  const EngineOptions& o = *context_.options;
  if (StyleLocked() != CompactionStyle::kLeveled) return false;
  const int stop = LevelOptionsOf(o).level0_stop_files;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    if (Level0Files(Metas(GroupFilesLocked(g))) >= stop) return true;
  }
  return false;
}

void Tablet::FinishFlush() {
  absl::MutexLock l(&mu_);
  flush_running_ = false;
}

bool Tablet::FlushMayRun() const {
  absl::MutexLock l(&mu_);
  return !imm_.empty() && (flush_running_ || (!paused_ && !dropping_));
}

bool Tablet::FlushDone() const {
  absl::MutexLock l(&mu_);
  return imm_.empty() && !flush_running_;
}

bool Tablet::TryStartCompaction() {
  absl::MutexLock l(&mu_);
  if (dropping_ || paused_ || compaction_running_) return false;
  bool work = false;
  for (LocalityGroup g : {LocalityGroup::kDefault, LocalityGroup::kInMemory}) {
    std::string cursor;
    uint32_t cursor_level = 0;
    work |= PickLocked(g, &cursor, &cursor_level).has_value();
  }
  if (!work) return false;
  compaction_running_ = true;
  return true;
}

std::optional<CompactionInput> Tablet::PickLocked(LocalityGroup group, std::string* cursor,
                                                  uint32_t* cursor_level) const {
  const std::vector<std::shared_ptr<TableFile>> group_files = GroupFilesLocked(group);
  const EngineOptions& o = *context_.options;
  CompactionInput in;
  if (StyleLocked() == CompactionStyle::kLeveled) {
    const LevelOptions level_options = LevelOptionsOf(o);
    std::optional<LeveledCompaction> c = PickLeveledCompaction(
        Metas(group_files), level_options, level_cursors_[static_cast<int>(group)],
        ReadExhaustedLocked(group, group_files));
    if (!c.has_value()) return std::nullopt;
    for (size_t i : c->inputs) in.files.push_back(group_files[i]);
    in.output_level = c->output_level;
    in.max_file_bytes = level_options.file_bytes;
    in.trivial_move = c->trivial_move;
    in.can_purge_tombstones = c->can_purge_tombstones;
    *cursor = std::move(c->cursor);
    *cursor_level = c->input_level;
    return in;
  }
  // Size-tiered runs are of level-0 files only (adjacent in age: they hold disjoint sequence
  // ranges). Files a leveled past left in deeper levels are older than all of them for their
  // rows and stay as they are.
  std::vector<std::shared_ptr<TableFile>> level0, deeper;
  for (const auto& f : group_files) (f->meta().level == 0 ? level0 : deeper).push_back(f);
  std::vector<uint64_t> sizes;
  for (const auto& f : level0) sizes.push_back(f->meta().size);
  std::vector<size_t> run =
      PickSizeTieredRun(sizes, o.size_tier_min_files, o.size_tier_max_files, o.size_tier_ratio);
  if (run.empty()) return std::nullopt;
  for (size_t i : run) in.files.push_back(level0[i]);
  // Tombstones may go when nothing older than the run exists: it ends with the oldest file of
  // level 0 and no deeper file holds its rows.
  in.can_purge_tombstones = run.back() == level0.size() - 1;
  FileRows rows = RowsOf(in.files.front()->meta());
  for (const auto& f : in.files) rows = RowsUnion(rows, RowsOf(f->meta()));
  for (const auto& f : deeper) {
    if (RowsOverlap(RowsOf(f->meta()), rows)) in.can_purge_tombstones = false;
  }
  return in;
}

bool Tablet::CanStartManualCompaction() const {
  absl::MutexLock l(&mu_);
  return !compaction_running_ && !paused_;
}

bool Tablet::TryStartManualCompaction() {
  absl::MutexLock l(&mu_);
  if (compaction_running_ || paused_) return false;
  compaction_running_ = true;
  return true;
}

void Tablet::FinishCompaction() {
  absl::MutexLock l(&mu_);
  compaction_running_ = false;
}

bool Tablet::Idle() const {
  absl::MutexLock l(&mu_);
  return !flush_running_ && !compaction_running_;
}

void Tablet::SetDropping() {
  absl::MutexLock l(&mu_);
  dropping_ = true;
}

bool Tablet::dropping() const {
  absl::MutexLock l(&mu_);
  return dropping_;
}

void Tablet::SetPaused(bool paused) {
  absl::MutexLock l(&mu_);
  paused_ = paused;
}

std::optional<FlushInput> Tablet::PickFlush() const {
  absl::MutexLock l(&mu_);
  if (imm_.empty()) return std::nullopt;
  FlushInput in;
  in.generation = generation_;
  in.mem = imm_.front().mem;
  in.descriptor = descriptor_;
  in.drop_marks = drop_marks_;
  in.now_micros = context_.clock->NowMicros();
  // Nothing older than the oldest memtable exists when the tablet has no files.
  in.can_purge_tombstones = files_->files.empty();
  in.gc_by_versions = some_versions_deleted_ <= in.mem->LargestSequence();
  return in;
}

std::optional<CompactionInput> Tablet::PickCompaction(LocalityGroup group,
                                                      std::vector<std::shared_ptr<TableFile>> files,
                                                      bool purge) {
  absl::MutexLock l(&mu_);
  CompactionInput in;
  if (files.empty()) {
    std::string cursor;
    uint32_t cursor_level = 0;
    std::optional<CompactionInput> picked = PickLocked(group, &cursor, &cursor_level);
    // The mark is done with once its file is gone or in the compaction picked.
    uint64_t& marked = read_exhausted_[static_cast<int>(group)];
    if (marked != 0) {
      std::optional<size_t> still = ReadExhaustedLocked(group, GroupFilesLocked(group));
      bool taken = !still.has_value();
      if (picked.has_value()) {
        for (const auto& f : picked->files) taken |= f->meta().number == marked;
      }
      if (taken) marked = 0;
    }
    if (!picked.has_value()) return std::nullopt;
    in = std::move(*picked);
    if (cursor_level > 0) {
      std::vector<std::string>& cursors = level_cursors_[static_cast<int>(group)];
      if (cursors.size() <= cursor_level) cursors.resize(cursor_level + 1);
      cursors[cursor_level] = std::move(cursor);
    }
  } else {
    in.files = std::move(files);
    in.can_purge_tombstones = purge;
    if (StyleLocked() == CompactionStyle::kLeveled) {
      in.output_level = MajorCompactionLevel(Metas(in.files));
      in.max_file_bytes = LevelOptionsOf(*context_.options).file_bytes;
    }
  }
  in.generation = generation_;
  in.descriptor = descriptor_;  // with the time, as in PickFlush
  in.drop_marks = drop_marks_;
  in.now_micros = context_.clock->NowMicros();
  SequenceNumber inputs_reach = 0;
  for (const auto& f : in.files) inputs_reach = std::max(inputs_reach, f->meta().max_sequence);
  in.gc_by_versions = some_versions_deleted_ <= inputs_reach;
  return in;
}

std::vector<std::shared_ptr<TableFile>> Tablet::GroupFiles(LocalityGroup group) const {
  absl::MutexLock l(&mu_);
  return GroupFilesLocked(group);
}

std::vector<std::shared_ptr<TableFile>> Tablet::GroupFilesLocked(LocalityGroup group) const {
  std::vector<std::shared_ptr<TableFile>> files;
  for (const auto& f : files_->files) {
    if (f->group() == group) files.push_back(f);
  }
  return files;
}

std::shared_ptr<const FileSet> Tablet::files() const {
  absl::MutexLock l(&mu_);
  return files_;
}

SequenceNumber Tablet::flushed_sequence() const {
  absl::MutexLock l(&mu_);
  return flushed_sequence_;
}

void Tablet::InstallFiles(std::vector<std::shared_ptr<TableFile>> added,
                          const std::vector<std::shared_ptr<TableFile>>& removed,
                          std::optional<SequenceNumber> flushed) {
  absl::MutexLock l(&mu_);
  auto files = std::make_shared<FileSet>();
  for (const auto& f : files_->files) {
    bool gone = std::any_of(removed.begin(), removed.end(),
                            [&](const auto& r) { return r.get() == f.get(); });
    if (!gone) files->files.push_back(f);
  }
  for (const auto& r : removed) {
    // A file moved to another level lives on in the added file that holds it.
    bool moved = std::any_of(added.begin(), added.end(),
                             [&](const auto& a) { return a->moved_from() == r.get(); });
    if (!moved) r->MarkObsolete();
  }
  for (auto& f : added) files->files.push_back(std::move(f));
  std::stable_sort(files->files.begin(), files->files.end(), [](const auto& a, const auto& b) {
    return a->meta().max_sequence > b->meta().max_sequence;
  });
  files_ = std::move(files);
  if (flushed.has_value()) flushed_sequence_ = std::max(flushed_sequence_, *flushed);
}

void Tablet::PopFlushed(const storage::MemTable* mem) {
  absl::MutexLock l(&mu_);
  if (!imm_.empty() && imm_.front().mem.get() == mem) imm_.pop_front();
}

void Tablet::Truncate(SequenceNumber truncated_at) {
  absl::MutexLock l(&mu_);
  for (const auto& f : files_->files) f->MarkObsolete();
  files_ = std::make_shared<FileSet>();
  mem_ = NewMemTable();
  mem_first_segment_ = 0;
  imm_.clear();
  flushed_sequence_ = std::max(flushed_sequence_, truncated_at);
}

void Tablet::ReplaceContent(std::vector<std::shared_ptr<TableFile>> files, DropMarks drop_marks,
                            SequenceNumber sequence) {
  absl::MutexLock l(&mu_);
  for (const auto& f : files_->files) f->MarkObsolete();
  auto file_set = std::make_shared<FileSet>();
  file_set->files = std::move(files);
  std::stable_sort(
      file_set->files.begin(), file_set->files.end(),
      [](const auto& a, const auto& b) { return a->meta().max_sequence > b->meta().max_sequence; });
  // As at Open: the files' entries are not read to find deletes of some versions.
  some_versions_deleted_ = 0;
  for (const auto& f : file_set->files) {
    some_versions_deleted_ = std::max(some_versions_deleted_, f->meta().max_sequence);
  }
  files_ = std::move(file_set);
  mem_ = NewMemTable();
  mem_first_segment_ = 0;
  imm_.clear();
  drop_marks_ = std::make_shared<const DropMarks>(std::move(drop_marks));
  flushed_sequence_ = sequence;
  ++generation_;
  // No group is in flight: nothing was assigned beyond the published sequence. given_out_ keeps
  // the old content's largest number, which its log records may still hold.
  assigned_ = sequence;
  last_sequence_.store(sequence, std::memory_order_release);
}

uint64_t Tablet::generation() const {
  absl::MutexLock l(&mu_);
  return generation_;
}

void Tablet::SetDescriptor(TabletDescriptor descriptor, DropMarks drop_marks) {
  absl::MutexLock l(&mu_);
  descriptor_ = std::make_shared<const TabletDescriptor>(std::move(descriptor));
  drop_marks_ = std::make_shared<const DropMarks>(std::move(drop_marks));
}

void Tablet::MarkFilesObsolete() {
  absl::MutexLock l(&mu_);
  for (const auto& f : files_->files) f->MarkObsolete();
}

size_t Tablet::MemtableBytes() const {
  absl::MutexLock l(&mu_);
  size_t total = mem_->ApproximateMemoryUsage();
  for (const auto& i : imm_) total += i.mem->ApproximateMemoryUsage();
  return total;
}

size_t Tablet::ActiveMemtableBytes() const {
  absl::MutexLock l(&mu_);
  return mem_->Empty() ? 0 : mem_->ApproximateMemoryUsage();
}

uint64_t Tablet::OldestSegment() const {
  absl::MutexLock l(&mu_);
  uint64_t oldest = mem_first_segment_;
  for (const auto& i : imm_) {
    if (i.first_segment != 0 && (oldest == 0 || i.first_segment < oldest)) oldest = i.first_segment;
  }
  return oldest;
}

}  // namespace tessera::tablet

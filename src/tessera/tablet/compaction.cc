#include "tessera/tablet/compaction.h"

#include <algorithm>

#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/table_builder.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {
namespace {

constexpr uint64_t kChargeStep = 256 * 1024;  // bytes passed to the rate limiter at once

bool HasInMemoryFamily(const model::TableSchema* schema) {
  if (schema == nullptr) return false;
  for (const auto& [name, family] : schema->families) {
    if (family.in_memory) return true;
  }
  return false;
}

}  // namespace

// One output file being written.
struct TableWriter::Output {
  uint64_t number = 0;
  std::string path;
  std::unique_ptr<WritableFile> file;
  std::unique_ptr<storage::TableBuilder> builder;
  storage::FileMeta meta;
  uint64_t charged_bytes = 0;  // bytes already passed through the rate limiter
};

TableWriter::TableWriter(const CompactionJobOptions& options, FileSystem* fs)
    : options_(options),
      fs_(fs),
      route_(!options.fixed_group.has_value() && HasInMemoryFamily(options.schema)) {}

TableWriter::~TableWriter() {
  // Anything not finished is abandoned and removed; so are finished files unless Finish
  // handed them all to the caller.
  for (auto& out : outputs_) {
    if (out && out->builder) {
      out->builder->Abandon();
      out->file.reset();
      (void)fs_->RemoveFile(out->path);
    }
  }
  if (!committed_) {
    for (auto& out : finished_) (void)fs_->RemoveFile(out->path);
  }
}

Status TableWriter::Add(const storage::ParsedInternalKey& parsed, std::string_view ikey,
                        std::string_view value) {
  model::CellKeyLayout layout;
  const bool well_formed = model::ParseCellKeyLayout(parsed.user_key, &layout);
  if (!route_) {
    // Written as it comes (a malformed key fails its reader, not this copy); a key that is no
    // cell key leaves the file's newest timestamp unknown.
    const auto group =
        static_cast<uint32_t>(options_.fixed_group.value_or(LocalityGroup::kDefault));
    RETURN_IF_ERROR(AddTo(group, ikey, value));
    if (well_formed) {
      NoteTimestamp(group, layout);  // unknown (the maximum) stays unknown
    } else {
      outputs_[group]->meta.max_timestamp = storage::FileMeta::kUnknownTimestamp;
    }
    return Status();
  }
  if (!well_formed) return absl::DataLossError("an SSTable entry has a malformed cell key");
  if (layout.kind != model::CellKind::kCell) {
    RETURN_IF_ERROR(AddTo(static_cast<uint32_t>(LocalityGroup::kDefault), ikey, value));
    return AddTo(static_cast<uint32_t>(LocalityGroup::kInMemory), ikey, value);
  }
  const model::FamilySchema* f = options_.schema->Find(layout.family(parsed.user_key));
  LocalityGroup group =
      (f != nullptr && f->in_memory) ? LocalityGroup::kInMemory : LocalityGroup::kDefault;
  RETURN_IF_ERROR(AddTo(static_cast<uint32_t>(group), ikey, value));
  NoteTimestamp(static_cast<uint32_t>(group), layout);
  return Status();
}

void TableWriter::NoteTimestamp(uint32_t group, const model::CellKeyLayout& layout) {
  if (layout.kind != model::CellKind::kCell) return;
  // AddTo left outputs_[group] as the output that holds the entry just added.
  int64_t& newest = outputs_[group]->meta.max_timestamp;
  newest = std::max(newest, layout.timestamp_micros);
}

Status TableWriter::AddTo(uint32_t group, std::string_view ikey, std::string_view value) {
  if (options_.max_file_bytes > 0 && group < outputs_.size() && outputs_[group] &&
      outputs_[group]->builder->FileSize() >= options_.max_file_bytes &&
      model::RowPrefix(storage::ExtractUserKey(ikey)) !=
          model::RowPrefix(storage::ExtractUserKey(outputs_[group]->meta.largest))) {
    RETURN_IF_ERROR(FinishOutput(group));  // full, and `ikey` starts a new row
  }
  Output* out = nullptr;
  ASSIGN_OR_RETURN(out, OutputFor(group));
  out->builder->Add(ikey, value);
  storage::FileMeta& m = out->meta;
  if (m.num_entries == 0) m.smallest.assign(ikey.data(), ikey.size());
  m.largest.assign(ikey.data(), ikey.size());
  storage::SequenceNumber seq = storage::ExtractSequence(ikey);
  if (m.num_entries == 0 || seq < m.min_sequence) m.min_sequence = seq;
  if (seq > m.max_sequence) m.max_sequence = seq;
  ++m.num_entries;
  if (options_.rate_limiter != nullptr) {
    uint64_t size = out->builder->FileSize();
    if (size - out->charged_bytes >= kChargeStep) {
      options_.rate_limiter->Request(static_cast<int64_t>(size - out->charged_bytes));
      out->charged_bytes = size;
    }
  }
  return out->builder->status();
}

Status TableWriter::FinishOutput(uint32_t group) {
  std::unique_ptr<Output>& out = outputs_[group];
  RETURN_IF_ERROR(out->builder->Finish());
  RETURN_IF_ERROR(out->file->Sync());
  RETURN_IF_ERROR(out->file->Close());
  out->meta.size = out->builder->FileSize();
  out->builder.reset();  // finished: removed only if the writer is not committed
  finished_.push_back(std::move(out));
  return Status();
}

Status TableWriter::Finish(CompactionResult* result) {
  for (uint32_t group = 0; group < outputs_.size(); ++group) {
    if (outputs_[group]) RETURN_IF_ERROR(FinishOutput(group));
  }
  for (const auto& out : finished_) {
    result->bytes_written += out->meta.size;
    result->outputs.push_back(out->meta);
  }
  committed_ = true;
  return Status();
}

StatusOr<TableWriter::Output*> TableWriter::OutputFor(uint32_t group) {
  if (group >= outputs_.size()) outputs_.resize(group + 1);
  if (!outputs_[group]) {
    auto out = std::make_unique<Output>();
    out->number = options_.new_file_number();
    out->path = TableFileName(options_.dir, out->number);
    ASSIGN_OR_RETURN(out->file, fs_->NewWritableFile(out->path));
    out->builder = std::make_unique<storage::TableBuilder>(options_.table_options, out->file.get());
    out->meta.number = out->number;
    out->meta.group = group;
    out->meta.level = options_.output_level;
    out->meta.max_timestamp = storage::FileMeta::kNoCellTimestamp;  // until a cell arrives
    outputs_[group] = std::move(out);
  }
  return outputs_[group].get();
}

StatusOr<CompactionResult> RunCompaction(const CompactionJobOptions& options, FileSystem* fs,
                                         storage::Iterator* input) {
  CompactionResult result;
  const model::TableSchema* schema = options.schema;
  model::CellVisibility::Options visibility_options{
      .gc_rule_for = [schema](std::string_view family) -> const model::GcRule* {
        return schema == nullptr ? nullptr : schema->FindGcRule(family);
      },
      .now_micros = options.now_micros,
      // GC only where nothing older exists: dropping a collected version elsewhere could expose
      // an older copy of the same cell in an older file (an overwritten value coming back).
      .apply_gc = options.can_purge_tombstones,
      .gc_by_versions = options.gc_by_versions,
      .dropped_before = {}};
  if (const DropMarks* marks = options.drop_marks; marks != nullptr && !marks->empty()) {
    // Entries of dropped families go in every flush and compaction: whatever they could hide
    // is older, so dead too.
    visibility_options.dropped_before = [marks](std::string_view family) {
      return DroppedBefore(*marks, family);
    };
  }
  model::CellVisibility visibility(std::move(visibility_options));
  TableWriter writer(options, fs);
  for (input->SeekToFirst(); input->Valid(); input->Next()) {
    std::string_view ikey = input->key();
    storage::ParsedInternalKey parsed;
    if (!storage::ParseInternalKey(ikey, &parsed)) {
      return absl::DataLossError("compaction input holds a malformed internal key");
    }
    ++result.input_entries;
    model::CellVisibility::Verdict verdict =
        visibility.Add(parsed.user_key, parsed.sequence, input->value());
    if (verdict == model::CellVisibility::Verdict::kMalformed) {
      return absl::DataLossError("compaction input holds a malformed cell key or tombstone");
    }
    if (!model::KeepInCompaction(verdict, options.can_purge_tombstones)) continue;
    ++result.output_entries;
    RETURN_IF_ERROR(writer.Add(parsed, ikey, input->value()));
  }
  RETURN_IF_ERROR(input->status());
  RETURN_IF_ERROR(writer.Finish(&result));
  return result;
}

std::vector<size_t> PickSizeTieredRun(const std::vector<uint64_t>& sizes, int min_files,
                                      int max_files, double ratio) {
  // Files under this size count as this size: many tiny files always merge.
  constexpr uint64_t kFloor = 1 << 20;
  std::vector<size_t> best;
  const size_t n = sizes.size();
  for (size_t i = 0; i < n; ++i) {
    uint64_t lo = std::max(sizes[i], kFloor), hi = lo;
    size_t j = i + 1;
    while (j < n && static_cast<int>(j - i) < max_files) {
      uint64_t s = std::max(sizes[j], kFloor);
      uint64_t new_lo = std::min(lo, s), new_hi = std::max(hi, s);
      if (static_cast<double>(new_hi) > ratio * static_cast<double>(new_lo)) break;
      lo = new_lo;
      hi = new_hi;
      ++j;
    }
    if (static_cast<int>(j - i) >= min_files && j - i > best.size()) {
      best.clear();
      for (size_t k = i; k < j; ++k) best.push_back(k);
    }
  }
  return best;
}

}  // namespace tessera::tablet

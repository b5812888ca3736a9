#include "tessera/tablet/compaction.h"

#include <algorithm>

#include "tessera/model/cell_key.h"
#include "tessera/model/cell_visibility.h"
#include "tessera/storage/dbformat.h"
#include "tessera/storage/table_builder.h"
#include "tessera/util/logging.h"

namespace tessera::tablet {
namespace {

// One output file being written.
struct Output {
  uint64_t number = 0;
  std::string path;
  std::unique_ptr<WritableFile> file;
  std::unique_ptr<storage::TableBuilder> builder;
  storage::FileMeta meta;
  uint64_t charged_bytes = 0;  // bytes already passed through the rate limiter
};

class Writer {
 public:
  Writer(const CompactionJobOptions& options, FileSystem* fs) : options_(options), fs_(fs) {}

  ~Writer() {
    // Anything not finished is abandoned and removed.
    for (auto& out : outputs_) {
      if (out && out->builder) {
        out->builder->Abandon();
        out->file.reset();
        (void)fs_->RemoveFile(out->path);
      }
    }
  }

  Status Add(LocalityGroup group, std::string_view ikey, std::string_view value) {
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

  // Finishes and syncs every output; moves their metadata into `result`.
  Status Finish(CompactionResult* result) {
    for (auto& out : outputs_) {
      if (!out) continue;
      RETURN_IF_ERROR(out->builder->Finish());
      RETURN_IF_ERROR(out->file->Sync());
      RETURN_IF_ERROR(out->file->Close());
      out->meta.size = out->builder->FileSize();
      result->bytes_written += out->meta.size;
      result->outputs.push_back(out->meta);
      out->builder.reset();  // finished: the destructor keeps the file
    }
    return Status();
  }

 private:
  static constexpr uint64_t kChargeStep = 256 * 1024;

  StatusOr<Output*> OutputFor(LocalityGroup group) {
    size_t index = static_cast<size_t>(group);
    if (index >= outputs_.size()) outputs_.resize(index + 1);
    if (!outputs_[index]) {
      auto out = std::make_unique<Output>();
      out->number = options_.new_file_number();
      out->path = TableFileName(options_.dir, out->number);
      ASSIGN_OR_RETURN(out->file, fs_->NewWritableFile(out->path));
      out->builder =
          std::make_unique<storage::TableBuilder>(options_.table_options, out->file.get());
      out->meta.number = out->number;
      out->meta.group = static_cast<uint32_t>(group);
      outputs_[index] = std::move(out);
    }
    return outputs_[index].get();
  }

  const CompactionJobOptions& options_;
  FileSystem* const fs_;
  std::vector<std::unique_ptr<Output>> outputs_;
};

bool HasInMemoryFamily(const model::TableSchema* schema) {
  if (schema == nullptr) return false;
  for (const auto& [name, family] : schema->families) {
    if (family.in_memory) return true;
  }
  return false;
}

}  // namespace

StatusOr<CompactionResult> RunCompaction(const CompactionJobOptions& options, FileSystem* fs,
                                         storage::Iterator* input) {
  CompactionResult result;
  Writer writer(options, fs);
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
  const bool route = !options.fixed_group.has_value() && HasInMemoryFamily(schema);
  const LocalityGroup fixed = options.fixed_group.value_or(LocalityGroup::kDefault);

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
    if (!route) {
      RETURN_IF_ERROR(writer.Add(fixed, ikey, input->value()));
      continue;
    }
    model::CellKeyLayout layout;
    if (!model::ParseCellKeyLayout(parsed.user_key, &layout)) {
      return absl::DataLossError("compaction input holds a malformed cell key");
    }
    if (layout.kind != model::CellKind::kCell) {
      // Tombstones go to every locality group, so that each group's copy hides that group's
      // data and a group can purge its copy alone — even for a family that changed groups
      // (its in-memory flag) and still has older cells in the other one.
      RETURN_IF_ERROR(writer.Add(LocalityGroup::kDefault, ikey, input->value()));
      RETURN_IF_ERROR(writer.Add(LocalityGroup::kInMemory, ikey, input->value()));
      continue;
    }
    std::string_view family = layout.family(parsed.user_key);
    const model::FamilySchema* f = schema->Find(family);
    LocalityGroup group =
        (f != nullptr && f->in_memory) ? LocalityGroup::kInMemory : LocalityGroup::kDefault;
    RETURN_IF_ERROR(writer.Add(group, ikey, input->value()));
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
